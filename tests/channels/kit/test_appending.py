"""The engine over a wire whose live preview is appended to (the optional ``Appending``
verbs): opened, grown and closed, exactly once; a refused start falls back to a message
that is edited."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from tests.waits import until
from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits
from thalos_bot.channels.ports import TextUpdate, TurnStarted
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId

pytestmark = pytest.mark.anyio


class NoStreamsError(Exception):
    pass


@dataclass
class Journal:
    progress: Mapping[str, object] = field(default_factory=dict)
    confirmed: bool = False

    async def save(self, progress: Mapping[str, object]) -> None:
        self.progress = dict(progress)

    async def confirm(self) -> None:
        self.confirmed = True

    async def refuse(self) -> None:
        raise AssertionError("refused")


class StreamingWire:
    """An in-memory platform whose messages are either edited or streamed."""

    name = "mem"
    limits = WireLimits(100, 100, chat_min_interval=0.0, global_rate=1000.0, resend="find")

    def __init__(self, *, streams: bool = True) -> None:
        self.streams = streams
        self.shown: dict[str, str] = {}
        self.open: set[str] = set()
        self.calls: list[tuple[str, str]] = []

    def render(self, source: str) -> str:
        return source

    def classify(self, exc: Exception) -> Classified | None:
        return (
            Classified(Failure.UNSUPPORTED, "no streams") if type(exc) is NoStreamsError else None
        )

    def _new(self, verb: str, text: str) -> str:
        ref = str(len(self.shown))
        self.shown[ref] = text
        self.calls.append((verb, text))
        return ref

    async def send(self, chat: str, message: Outgoing[Any]) -> str:
        return self._new("send", message.text)

    async def edit(self, chat: str, ref: str, message: Outgoing[Any]) -> None:
        assert ref not in self.open, "a stream is closed before it is edited"
        self.shown[ref] = message.text
        self.calls.append(("edit", message.text))

    async def upload(self, chat: str, image: ToolImage | VoiceClip, caption: Outgoing[Any]) -> str:
        raise AssertionError

    async def typing(self, chat: str, thread: str | None) -> None:
        return None

    async def find(self, chat: str, key: str) -> str | None:
        return None

    def appends(self, chat: str, thread: str | None) -> bool:
        return True

    async def start(self, chat: str, message: Outgoing[Any]) -> str:
        if not self.streams:
            self.calls.append(("start refused", message.text))
            raise NoStreamsError
        ref = self._new("start", message.text)
        self.open.add(ref)
        return ref

    async def append(self, chat: str, ref: str, text: str) -> None:
        assert ref in self.open
        self.shown[ref] += text
        self.calls.append(("append", text))

    async def finish(self, chat: str, ref: str, text: str, key: str) -> None:
        assert ref in self.open
        self.shown[ref] += text
        self.open.discard(ref)
        self.calls.append(("finish", text))


async def stream(wire: StreamingWire, final: str) -> Journal:
    """An answer streamed in two pieces, then its final text through an outbox row."""
    journal = Journal()
    chat = ConversationId("chat")
    async with anyio.create_task_group() as group:
        rendering = Rendering("edit", 60.0, backoff_initial=0.01, backoff_max=0.1, limit=100)
        adapter = WireAdapter[str, Any](
            wire,
            group,
            rendering,
            channel_id=ChannelId("mem"),
            parse=lambda c: (str(c), None),
            private=lambda _: True,
        )
        await adapter.deliver(chat, TurnStarted())
        await adapter.deliver(chat, TextUpdate("Hello"))
        await until(lambda: "Hello" in wire.shown.values(), 5, 0.005)
        await adapter.deliver(chat, TextUpdate(" world"))
        await until(lambda: "Hello world" in wire.shown.values(), 5, 0.005)
        await adapter.deliver_final(chat, final, journal, ends_turn=True)
        await until(lambda: journal.confirmed, 5, 0.005)
        group.cancel_scope.cancel()
    return journal


async def test_a_preview_is_opened_grown_and_closed_even_when_it_shows_it_all() -> None:
    wire = StreamingWire()
    await stream(wire, "Hello world")
    assert wire.calls == [("start", "Hello"), ("append", " world"), ("finish", "")]
    assert wire.shown == {"0": "Hello world"}
    assert wire.open == set()


async def test_a_final_that_does_not_extend_the_preview_closes_it_then_edits_it() -> None:
    wire = StreamingWire()
    await stream(wire, "Hi there")
    assert wire.calls[-2:] == [("finish", ""), ("edit", "Hi there")]
    assert wire.shown == {"0": "Hi there"}


async def test_a_refused_start_streams_by_edits() -> None:
    wire = StreamingWire(streams=False)
    await stream(wire, "Hello world!")
    assert [verb for verb, _ in wire.calls] == ["start refused", "send", "edit", "edit"]
    assert wire.shown == {"0": "Hello world!"}
