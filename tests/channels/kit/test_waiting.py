"""The kit's :class:`~thalos_bot.channels.waiting.Waiting`: what a platform will not send
again is held until the pump takes its message, across a restart; the inlet's count of
what the pump has not taken yet (a position kept past it would lose it)."""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

import anyio
import pytest
from anyio.abc import TaskGroup

from tests.waits import settled
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.intake.files import RemoteFile, WithFiles
from thalos_bot.channels.ports import InboundMessage, Sender
from thalos_bot.channels.running import Delivering
from thalos_bot.channels.waiting import Waiting
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext

pytestmark = pytest.mark.anyio


def _message(ref: str) -> InboundMessage:
    sender = Sender(SecurityContext.of("owner"), "owner")
    return InboundMessage(
        ChannelId("x"), ConversationId("c"), sender, ref, datetime.now(UTC), message_ref=ref
    )


class Disk:
    def __init__(self) -> None:
        self.saved: dict[str, dict[str, object]] | None = None
        self.waiting = Waiting("x", self.save)

    async def save(self) -> None:
        self.saved = self.waiting.dump()

    def restarted(self) -> Waiting:
        again = Waiting("x", self.save)
        again.load(self.saved)
        return again


async def test_what_the_pump_never_took_is_held_for_the_next_start() -> None:
    disk = Disk()
    disk.waiting.hold("c", "1", {"n": 1})
    disk.waiting.hold("c", "2", {"n": 2})
    await disk.save()
    await disk.waiting.taken(_message("1"))
    assert [event for _, event in disk.restarted().held()] == [{"n": 2}]


async def test_what_arrived_unread_is_freed_as_what_it_became() -> None:
    """Telegram's updates: held by update id before they are read; one that became
    nothing is freed, a message as it is taken, an album's parts with the message they
    make (its first part's)."""
    disk = Disk()
    await disk.waiting.arrived({str(n): {"n": n} for n in range(1, 5)})
    assert len(disk.saved or {}) == 4, "written before the ack"
    async with anyio.create_task_group() as group:
        assert disk.waiting.became("1", None, group) is None  # a stranger's
        message = _message("20")
        assert disk.waiting.became("2", message, group) is message
        for n in (3, 4):
            part = WithFiles(_message(f"{n}0"), (), "album", n)
            assert disk.waiting.became(str(n), part, group).base.handled is not None
        await disk.waiting.taken(_message("30"))  # the album, as one message
        assert [event for _, event in disk.restarted().held()] == [{"n": 2}]
        group.cancel_scope.cancel()


async def test_what_is_held_again_is_named_again_by_what_it_becomes() -> None:
    disk = Disk()
    await disk.waiting.arrived({"1": {"n": 1}})
    async with anyio.create_task_group() as group:
        disk.waiting.became("1", _message("10"), group)
        await disk.save()
        again = disk.restarted()
        assert again.again(lambda event: str(event["n"])) == [{"n": 1}]
        again.became("1", _message("10"), group)
        await again.taken(_message("10"))
    assert again.held() == []


@dataclass
class Served:
    """What :meth:`Waiting.hand` uses of the channel: its task group and its intake
    (which records what it is given)."""

    group: TaskGroup
    received: list[tuple[InboundMessage, tuple[RemoteFile, ...]]] = field(default_factory=list)

    @property
    def intake(self) -> Served:
        return self

    def receive(self, message: InboundMessage, files: tuple[RemoteFile, ...] = ()) -> None:
        self.received.append((message, files))

    def served(self) -> Delivering[Any, Any, Any]:
        return cast("Delivering[Any, Any, Any]", self)


async def test_what_is_held_again_is_held_once_more_only_if_handed_again() -> None:
    """Slack's and Signal's way: a message handed to the intake is held with its event
    (none for one with nothing to keep); the next start reads each held event through
    admission again, and one no longer admitted is not handed, so not held."""
    disk = Disk()
    file = RemoteFile("document", "f", "x:f", None, "a.txt")
    async with anyio.create_task_group() as group:
        served = Served(group)
        disk.waiting.hand(served.served(), _message("1"), (), {"n": 1})
        disk.waiting.hand(served.served(), _message("2"), (file,), {"n": 2})
        disk.waiting.hand(served.served(), _message("3"), (), None)  # a slash command
        await disk.save()
        again = disk.restarted()
        assert again.again() == [{"n": 1}, {"n": 2}]
        assert again.held() == []
        again.hand(served.served(), _message("2"), (file,), {"n": 2})  # "1": a stranger now
        assert [event for _, event in again.held()] == [{"n": 2}]
        group.cancel_scope.cancel()
    assert [(m.text, files) for m, files in served.received] == [
        ("1", ()),
        ("2", (file,)),
        ("3", ()),
        ("2", (file,)),
    ]
    assert served.received[0][0].handled is None
    assert served.received[1][0].handled is not None, "with its files: watched for a refusal"


async def test_a_message_the_intake_refused_is_held_no_more() -> None:
    disk = Disk()
    disk.waiting.hold("c", "1", {"n": 1})
    async with anyio.create_task_group() as group:
        message = disk.waiting.watch(_message("1"), group)
        assert message.handled is not None
        message.handled.set()  # as the intake does once it said why it refused
    assert disk.saved == {}, "written as freed"
    assert disk.restarted().held() == []


@pytest.mark.parametrize("kept", [None, [], "x", {"k": "not an event"}])
async def test_a_state_that_holds_no_events_holds_none(kept: object) -> None:
    waiting = Waiting("x", Disk().save)
    waiting.load(kept)
    assert waiting.held() == []


async def test_the_inlet_counts_what_the_pump_has_not_taken() -> None:
    inlet = Inlet(ChannelId("x"))
    inlet.hand_over(_message("1"))
    inlet.hand_over(_message("2"))
    all_taken = anyio.Event()

    async def watch() -> None:
        await inlet.all_taken()
        all_taken.set()

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        async with aclosing(inlet.messages()) as arrivals:
            await anext(arrivals)
            await settled()
            assert not all_taken.is_set(), "the second still waits in the inlet"
            await anext(arrivals)
            await all_taken.wait()
    inlet.close()
