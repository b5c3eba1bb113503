"""Across a restart: an event Slack redelivers to the new process starts no second
turn, and a final answer the outbox hands over again shows exactly once."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from slack_sdk.web.async_client import AsyncWebClient

import thalos_bot.channels.kept as kept_module
from tests.fakes.slack_api import SlackFake
from tests.slack.harness import CHANNEL, USER, running_bot
from thalos_bot.channels.kept import write_private
from thalos_bot.domain.ids import ConversationId
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot_slack.wire import metadata

pytestmark = pytest.mark.anyio


@dataclass
class Journal:
    """An outbox row as a channel sees it (the port, kept in memory)."""

    progress: Mapping[str, object] = field(default_factory=dict)
    saved: list[Mapping[str, object]] = field(default_factory=list)
    confirmed: bool = False
    refused: bool = False
    settled: anyio.Event = field(default_factory=anyio.Event)

    async def save(self, progress: Mapping[str, object]) -> None:
        self.progress = dict(progress)
        self.saved.append(dict(progress))

    async def confirm(self) -> None:
        self.confirmed = True
        self.settled.set()

    async def refuse(self) -> None:
        self.refused = True
        self.settled.set()

    async def wait(self) -> None:
        with anyio.fail_after(10):
            await self.settled.wait()
        assert self.confirmed


@pytest.mark.parametrize("slow_disk", [False, True])
async def test_an_event_redelivered_after_a_restart_starts_no_second_turn(
    fake: SlackFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow_disk: bool
) -> None:
    """``slow_disk``: the ledger's write takes longer than the answer, so the stop
    comes while the listener still waits for it (the stop must still save it)."""
    if slow_disk:

        def slow_write(path: Path, data: Mapping[str, object]) -> None:
            time.sleep(0.5)
            write_private(path, data)

        monkeypatch.setattr(kept_module, "write_private", slow_write)
    fake.socket.ack_timeout = 60  # the first process never sees the retry
    provider = ScriptedProvider([[Say("answered before the restart")], [Say("again?!")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        fake.lose_acks(1)
        bot.say("hi")
        await bot.shows(["answered before the restart"])
    (envelope,) = [
        e for e in fake.socket.envelopes.values() if e.payload["event"].get("user") == USER
    ]
    assert not envelope.acked
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        await fake.wait_for(lambda: envelope.acked)
        assert envelope.attempt == 1
        assert envelope.reason == "connection_failed"
        bot.say("!status")
        await bot.answer(2)
    assert len(provider.requests) == 1


async def _posted_by_an_earlier_process(fake: SlackFake, text: str, key: str) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.base_url)
    await client.chat_postMessage(channel=fake.dm(USER), text=text, metadata=metadata(key))


async def test_a_final_in_doubt_that_arrived_is_not_posted_again(
    fake: SlackFake, tmp_path: Path
) -> None:
    text = "part one"
    # The earlier process noted the part's key in the row, posted it, and died before
    # it heard back.
    await _posted_by_an_earlier_process(fake, text, "n0nce")
    journal = Journal({"parts_done": 0, "key": "n0nce"})
    async with running_bot(fake, tmp_path=tmp_path) as bot:
        adapter = bot.pair.adapter
        assert hasattr(adapter, "deliver_final")
        await adapter.deliver_final(ConversationId(fake.dm(USER)), text, journal, ends_turn=False)
        await journal.wait()
    assert fake.texts(fake.dm(USER)) == [text]
    assert len(fake.calls_of("chat.postMessage")) == 1, "only the earlier process's"


async def test_a_final_in_doubt_that_never_arrived_is_posted_once(
    fake: SlackFake, tmp_path: Path
) -> None:
    journal = Journal({"parts_done": 0, "key": "n0nce"})
    async with running_bot(fake, tmp_path=tmp_path) as bot:
        adapter = bot.pair.adapter
        assert hasattr(adapter, "deliver_final")
        await adapter.deliver_final(
            ConversationId(fake.dm(USER)), "the answer", journal, ends_turn=False
        )
        await journal.wait()
    assert fake.texts(fake.dm(USER)) == ["the answer"]
    assert journal.saved, "saved before the post"
    assert journal.saved[0]["key"] == "n0nce", "posted again as the same request"
    (message,) = fake.messages(fake.dm(USER))
    assert message.metadata == metadata("n0nce")


async def test_a_long_final_resumes_after_the_parts_already_shown(
    fake: SlackFake, tmp_path: Path
) -> None:
    text = ("alpha " * 500).strip() + "\n\n" + ("omega " * 500).strip()
    journal = Journal({"parts_done": 1})
    async with running_bot(fake, tmp_path=tmp_path) as bot:
        adapter = bot.pair.adapter
        assert hasattr(adapter, "deliver_final")
        await adapter.deliver_final(ConversationId(fake.dm(USER)), text, journal, ends_turn=False)
        await journal.wait()
    (shown,) = fake.texts(fake.dm(USER))
    assert shown.startswith("omega"), "part one was shown by the earlier process"


async def test_a_final_resumed_on_a_stream_left_open_stops_it_and_shows_the_text(
    fake: SlackFake, tmp_path: Path
) -> None:
    """The earlier process streamed the answer into a thread and died before stopping
    it: the final is made the stream's own text, not a second message."""
    root = fake.say(USER, "a thread", channel=CHANNEL)  # no mention: not a turn
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.base_url)
    started = await client.api_call(
        "chat.startStream",
        json={
            "channel": CHANNEL,
            "thread_ts": root,
            "markdown_text": "the answer so",
            "recipient_user_id": USER,
            "recipient_team_id": fake.workspace.team_id,
        },
    )
    journal = Journal({"parts_done": 0, "live_id": started["ts"]})
    async with running_bot(fake, tmp_path=tmp_path) as bot:
        adapter = bot.pair.adapter
        assert hasattr(adapter, "deliver_final")
        conversation = ConversationId(f"{CHANNEL}/{root}")
        await adapter.deliver_final(conversation, "the answer so far", journal, ends_turn=False)
        await journal.wait()
    (message,) = fake.messages(CHANNEL, thread_ts=root)
    assert message.shown == "the answer so far"
    assert not message.streaming
    assert fake.calls_of("chat.postMessage") == []


async def test_a_message_acknowledged_but_not_taken_at_a_stop_is_answered_after_it(
    fake: SlackFake, tmp_path: Path
) -> None:
    """Slack never sends an acknowledged event again. One stopped before the pump took
    it (here its file still downloading) is answered by the next process, once."""
    provider = ScriptedProvider([[Say("read it")], [Say("again?!")]])
    fake.files_served.clear()
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        bot.say("what does it say?", files=[("notes.txt", "text/plain", b"buy milk")])
        (envelope,) = [
            e for e in fake.socket.envelopes.values() if e.payload["event"].get("user") == USER
        ]
        await fake.wait_for(lambda: envelope.acked and fake.downloads_begun == 1)
    assert provider.requests == [], "stopped before the pump had it"
    fake.files_served.set()
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        await bot.shows(["read it"])
        bot.say("!status")
        await bot.answer(2)
    assert envelope.attempt == 0, "acknowledged: Slack never sent it again"
    assert len(provider.requests) == 1
    assert "buy milk" in str(provider.requests[0].messages[-1].content)


async def test_a_message_whose_file_was_refused_is_not_handed_over_again_after_a_restart(
    fake: SlackFake, tmp_path: Path
) -> None:
    """Refused (and said so), a message is done with: the next start does not fetch its
    file again nor tell the refusal a second time."""
    fake.serve_files = False  # Slack answers with its sign-in page
    provider = ScriptedProvider([[Say("status?")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        bot.say("see file", files=[("a.txt", "text/plain", b"hello")])
        (refusal,) = await bot.answer(1)
    assert "could not be downloaded" in refusal
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="off") as bot:
        bot.say("!help")
        await bot.answer(2)
    assert fake.downloads_refused == 1
    assert fake.texts(fake.dm(USER))[0] == refusal
    assert all("could not be downloaded" not in text for text in fake.texts(fake.dm(USER))[1:])
