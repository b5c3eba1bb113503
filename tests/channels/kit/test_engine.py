"""The delivery engine over a strict fake of a platform whose sends are idempotent by key
(as Matrix transaction ids and Discord nonces are): a daemon killed while its streamed
preview's send was in flight, or after that send was in doubt, shows the answer once,
as one message with the final text, after a restart."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace

import anyio
import pytest
from structlog.testing import capture_logs

from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits
from thalos_bot.channels.ports import TextUpdate, TurnStarted
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId

pytestmark = pytest.mark.anyio

CHAT = ConversationId("chat")
FINAL = "Hello world, at last."


class LostError(Exception):
    """The platform took the call; its answer never came back."""


@dataclass
class Platform:
    """Messages by id; a send with a key it has seen answers the message it made."""

    texts: dict[str, str] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    script: list[str] = field(default_factory=list)
    """What each next call does after it acted: ``"lose"`` its answer, ``"hang"``."""
    acted: anyio.Event = field(default_factory=anyio.Event)
    hung: anyio.Event = field(default_factory=anyio.Event)

    async def act(self) -> None:
        self.acted.set()
        what = self.script.pop(0) if self.script else "answer"
        if what == "lose":
            raise LostError
        if what == "hang":
            self.hung.set()
            await anyio.sleep_forever()


class Wire:
    name = "fake"
    limits = WireLimits(
        message_units=4096,
        caption_units=1024,
        chat_min_interval=0.0,
        global_rate=1000.0,
        resend="repeat",
    )

    def __init__(self, platform: Platform) -> None:
        self.platform = platform

    def render(self, source: str) -> str:
        return source

    def classify(self, exc: Exception) -> Classified | None:
        return Classified(Failure.MAYBE_SENT, "lost") if isinstance(exc, LostError) else None

    async def send(self, chat: str, message: Outgoing[None]) -> str:
        platform = self.platform
        ref = platform.keys.get(message.key)
        if ref is None:
            ref = platform.keys[message.key] = str(len(platform.texts))
            platform.texts[ref] = message.text
        await platform.act()
        return ref

    async def edit(self, chat: str, ref: str, message: Outgoing[None]) -> None:
        self.platform.texts[ref] = message.text
        await self.platform.act()

    async def upload(self, chat: str, image: ToolImage | VoiceClip, caption: Outgoing[None]) -> str:
        raise NotImplementedError

    async def typing(self, chat: str, thread: str | None) -> None:
        pass


@dataclass
class Journal:
    progress: Mapping[str, object] = field(default_factory=dict)
    confirmed: anyio.Event = field(default_factory=anyio.Event)

    async def save(self, progress: Mapping[str, object]) -> None:
        self.progress = dict(progress)

    async def confirm(self) -> None:
        self.confirmed.set()

    async def refuse(self) -> None:
        raise AssertionError("refused")


@asynccontextmanager
async def daemon(platform: Platform) -> AsyncIterator[WireAdapter[str, None]]:
    """One process's channel; leaving it without waiting is a kill."""
    async with anyio.create_task_group() as group:
        rendering = Rendering("edit", 5.0, backoff_initial=0.01, backoff_max=0.05)
        yield WireAdapter(
            Wire(platform),
            group,
            rendering,
            channel_id=ChannelId("fake"),
            parse=lambda conversation: (conversation, None),
            private=lambda _chat: True,
        )
        group.cancel_scope.cancel()


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(["hang"], id="the preview's send in flight"),
        pytest.param(["lose", "hang"], id="the preview's send in doubt, then the final's"),
    ],
)
async def test_a_kill_mid_stream_shows_the_answer_once_after_a_restart(script: list[str]) -> None:
    platform = Platform(script=script)
    journal = Journal()
    with anyio.fail_after(10):
        async with daemon(platform) as first:
            await first.deliver(CHAT, TurnStarted())
            await first.deliver(CHAT, TextUpdate("Hello"))
            await platform.acted.wait()  # the preview's send went out
            await first.deliver_final(CHAT, FINAL, journal, ends_turn=True)
            await platform.hung.wait()
        assert list(platform.texts.values()) == ["Hello"]
        async with daemon(platform) as second:
            await second.deliver_final(CHAT, FINAL, Journal(journal.progress), ends_turn=False)
            await second.drain()
    assert list(platform.texts.values()) == [FINAL]


async def test_a_drain_at_shutdown_that_gives_up_names_the_chats_still_waiting() -> None:
    platform = Platform(script=["hang"])
    with anyio.fail_after(10):
        async with daemon(platform) as adapter:
            await adapter.deliver_final(CHAT, FINAL, Journal(), ends_turn=True)
            await platform.hung.wait()
            with capture_logs() as logs:
                await adapter.drain_at_shutdown(0)
    [said] = [e for e in logs if e["event"] == "fake_answers_undelivered_at_shutdown"]
    assert said["conversations"] == 1
    assert said["chats"] == ["chat"]


async def test_the_answered_message_is_named_before_its_final_is_queued() -> None:
    """The ``answering`` hook hears the ref of the message a turn answers before that
    turn's final reaches the outbox (nothing sent yet), once; a final an earlier process
    began (its row has progress) does not name it again."""
    platform = Platform()
    heard: list[tuple[str, int]] = []

    async def answering(ref: str) -> None:
        heard.append((ref, len(platform.texts)))

    with anyio.fail_after(10):
        async with daemon(platform) as adapter:
            adapter.answering = answering
            await adapter.deliver(CHAT, TurnStarted(answers="mail-7"))
            await adapter.deliver_final(CHAT, FINAL, Journal(), ends_turn=True)
            await adapter.deliver(CHAT, TurnStarted(answers="mail-8"))
            resumed = Journal({"parts_done": 1, "live_id": "0"})
            await adapter.deliver_final(CHAT, FINAL, resumed, ends_turn=True)
            await adapter.drain()
    assert heard == [("mail-7", 0)]


async def test_a_wire_that_finds_its_sends_in_doubt_without_a_find_is_refused_at_start() -> None:
    class Finds(Wire):
        limits = replace(Wire.limits, resend="find")

    rendering = Rendering("edit", 5.0, backoff_initial=0.01, backoff_max=0.05)
    async with anyio.create_task_group() as group:
        with pytest.raises(TypeError, match="fake: the wire's resend is 'find' but it has no"):
            WireAdapter(
                Finds(Platform()),
                group,
                rendering,
                channel_id=ChannelId("fake"),
                parse=lambda conversation: (conversation, None),
                private=lambda _chat: True,
            )
