"""The kit's catch-up loop: every known chat read after its mark and admitted oldest
first; a read the wire knows as failed is logged and the others still read; a read
told to wait holds the channel's pacer, then goes again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

import anyio
import pytest
from structlog.testing import capture_logs

from tests.waits import until
from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.intake.catch_up import CatchingUp, catch_up, paced
from thalos_bot.channels.pacing.gate import GlobalPacer
from thalos_bot.domain.ids import ChannelId

pytestmark = pytest.mark.anyio


class RefusedError(Exception):
    """What the platform's client raises (the wire classifies it)."""


class WaitError(Exception):
    pass


class Marks:
    def __init__(self, stored: Mapping[str, int]) -> None:
        self.stored = dict(stored)

    async def load(self, channel_id: ChannelId) -> dict[str, int]:
        return dict(self.stored)

    async def raise_marks(self, channel_id: ChannelId, marks: Mapping[str, int]) -> None:
        self.stored.update(marks)

    async def prune(
        self, channel_id: ChannelId, older_than: timedelta, *, keep: Sequence[str] = ()
    ) -> int:
        return 0


def classify(exc: Exception) -> Classified | None:
    if isinstance(exc, RefusedError):
        return Classified(Failure.REJECTED, "not_in_channel")
    if isinstance(exc, WaitError):
        return Classified(Failure.RETRY_AFTER, "ratelimited", 0.05, everywhere=True)
    return None


async def book(**marks: int) -> MarkBook:
    made = MarkBook(Marks(marks), ChannelId("chat"))
    await made.load()
    return made


async def test_a_chat_whose_read_fails_is_logged_and_the_others_are_admitted() -> None:
    history = {"C1": ["a", "b"], "C3": ["c"]}
    read_from: dict[str, int] = {}

    async def read(chat: str, mark: int) -> list[str]:
        read_from[chat] = mark
        if chat == "C2":
            raise RefusedError("its text never logged")
        return history[chat]

    admitted: list[str] = []

    async def admit(message: str) -> None:
        admitted.append(message)

    with capture_logs() as logs:
        await catch_up("chat", await book(C1=5, C2=6, C3=7), read, admit, classify)
    assert read_from == {"C1": 5, "C2": 6, "C3": 7}
    assert sorted(admitted) == ["a", "b", "c"]
    assert admitted.index("a") < admitted.index("b"), "in the order read"
    failed = [e for e in logs if e["event"] == "chat_catch_up_failed"]
    assert failed == [
        {
            "event": "chat_catch_up_failed",
            "chat": "C2",
            "error": "not_in_channel",
            "log_level": "warning",
        }
    ]


async def test_an_error_the_wire_does_not_know_is_raised() -> None:
    async def read(chat: str, mark: int) -> list[str]:
        raise KeyError(chat)

    async def admit(message: str) -> None:
        raise AssertionError(message)

    with pytest.raises(KeyError):
        await catch_up("chat", await book(C1=1), read, admit, classify)


async def test_a_read_told_to_wait_holds_the_pacer_then_goes_again() -> None:
    pacer = GlobalPacer(1000.0, burst=10)
    calls: list[float] = []

    async def call() -> str:
        calls.append(pacer.blocked_until)
        if len(calls) == 1:
            raise WaitError
        return "page"

    assert await paced(pacer, classify, call) == "page"
    assert calls[0] == 0.0
    assert calls[1] > 0.0, "the second call went once the pacer's hold had passed"
    assert pacer.blocked_until > 0.0


async def test_a_wait_told_again_and_again_is_given_up_as_the_reads_failure() -> None:
    pacer = GlobalPacer(1000.0, burst=10)

    async def call() -> str:
        raise WaitError

    with pytest.raises(WaitError):
        await paced(pacer, classify, call)


async def test_a_run_that_fails_is_logged_and_the_next_connection_runs_again() -> None:
    runs: list[int] = []

    async def once() -> None:
        runs.append(len(runs))
        if len(runs) == 1:
            raise KeyError("a bug in the reader")

    catching = CatchingUp(once)
    with capture_logs() as logs:
        async with anyio.create_task_group() as group:
            group.start_soon(catching.run)
            catching.connected()
            await until(lambda: len(runs) == 1, 5, 0.01)
            catching.connected()  # a reconnect: the run goes on
            await until(lambda: len(runs) == 2, 5, 0.01)
            group.cancel_scope.cancel()
    failed = [e for e in logs if e["event"] == "catch_up_failed"]
    assert [e["error"] for e in failed] == ["KeyError"]
