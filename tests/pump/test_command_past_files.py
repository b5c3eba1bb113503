"""A command sent once an answer's text is out is answered at once, not after that
turn's files (its tool images, the answer read aloud), which can take a while to make
and upload; the files keep their order, and a message for the model still waits."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.pump.harness import RecordingAdapter, running_pump
from tests.speech.test_speaking import RecordingSpeaker, speaking
from thalos_bot.channels.ports import Notice
from thalos_bot.domain.events import ToolImage, TurnCompleted, VoiceClip
from thalos_bot.domain.ids import ConversationId
from thalos_bot.providers.scripted import Say, ScriptedProvider

pytestmark = pytest.mark.anyio

LONG = " ".join(f"Sentence number {n} is here." for n in range(12))


class FilesHeldAdapter(RecordingAdapter):
    """Shows everything at once but a file, whose delivery is held until ``released``
    (a slow upload); a file is recorded once delivered."""

    def __init__(self) -> None:
        super().__init__()
        self.released = anyio.Event()
        self.holding = 0

    async def deliver(self, conversation_id: ConversationId, event: Any) -> None:
        if isinstance(event, ToolImage | VoiceClip):
            self.holding += 1
            await self.released.wait()
        await super().deliver(conversation_id, event)


def shown(adapter: RecordingAdapter) -> list[str]:
    """What the chat shows, in order: the answer, each clip, each notice's first word."""
    seen: list[str] = []
    for d in adapter.of():
        if isinstance(d, TurnCompleted):
            seen.append("answer")
        elif isinstance(d, VoiceClip):
            seen.append(f"clip {d.part}")
        elif isinstance(d, Notice):
            seen.append(d.text.split()[0])
    return seen


async def test_status_after_the_answer_comes_before_its_voice_clips() -> None:
    adapter = FilesHeldAdapter()
    provider = ScriptedProvider([[Say(LONG)]])
    async with running_pump(
        provider, adapter=adapter, speaking=speaking(RecordingSpeaker(), clip_chars=200)
    ) as h:
        turn = h.source.send("read it to me", voice=True)
        await anyio.wait_all_tasks_blocked()
        assert adapter.holding == 1, "the first clip's upload is under way"
        command = h.source.send("/status")
        await anyio.wait_all_tasks_blocked()
        [status] = adapter.notices()  # before: it waited for the clips
        assert "idle" in status  # the turn is over: only its files are still going out
        adapter.released.set()
        await turn.wait()
        await command.wait()
    assert shown(adapter) == ["answer", status.split()[0], "clip 1", "clip 2"]


async def test_new_and_a_message_for_the_model_still_wait_for_the_files() -> None:
    """``/new`` changes the session the turn's end still writes to; a message starts the
    next answer, which follows the files of this one."""
    adapter = FilesHeldAdapter()
    provider = ScriptedProvider([[Say("It is noon.")], [Say("Hello.")]])
    async with running_pump(provider, adapter=adapter, speaking=speaking(RecordingSpeaker())) as h:
        turn = h.source.send("time?", voice=True)
        await anyio.wait_all_tasks_blocked()
        assert adapter.holding == 1
        new = h.source.send("/new")
        second = h.source.send("hello")
        await anyio.wait_all_tasks_blocked()
        assert adapter.notices() == []
        assert adapter.final_texts() == ["It is noon."]
        adapter.released.set()
        for handled in (turn, new, second):
            await handled.wait()
    assert shown(adapter) == ["answer", "clip 1", "New", "answer"]
    assert adapter.final_texts() == ["It is noon.", "Hello."]
