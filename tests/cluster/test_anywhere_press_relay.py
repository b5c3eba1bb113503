"""Approval presses relayed among replicas, on a real PostgreSQL. A press relayed while
PostgreSQL refuses it: the replica that heard it writes it again until the store takes
it, in the order pressed, and every replica's ``Asking`` hears it then (here: this
replica's own, which hears what it relays as the others do). A press written while the
asking replica's LISTEN connection is being made again: that replica reads it from the
store once it listens again, and its question is decided by it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from uuid import uuid4

import anyio
import psycopg
import pytest

from tests.cluster.unsent import unsent_pair
from tests.waits import until
from thalos_bot.channels.approvals.asking import RELAYED, Asking
from thalos_bot.channels.approvals.relay import Press, Presses
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.people import People
from thalos_bot.domain.security import SecurityContext
from thalos_bot.service import press_relay
from thalos_bot.service.anywhere import Anywhere
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg import listener
from thalos_bot.storage.pg.database import Connection, PgDatabase, listening
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict

pytestmark = pytest.mark.anyio
CHANNEL = "slack"
GUARD = 30
VERDICTS: tuple[Verdict, ...] = ("denied", "approved", "approved-session")
"""Seconds before a test that hangs (a press never heard) fails."""


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


class Outage:
    """The replica's pool refusing every transaction and statement as a server out of
    reach does (``OperationalError`` on taking a connection), while ``down``."""

    def __init__(self, db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
        self.down = False
        self.refused = 0
        for name in ("transaction", "single"):
            monkeypatch.setattr(db, name, self._refusing(getattr(db, name)))

    def _refusing(
        self, real: Callable[[], AbstractAsyncContextManager[Connection]]
    ) -> Callable[[], AbstractAsyncContextManager[Connection]]:
        def connection() -> AbstractAsyncContextManager[Connection]:
            if self.down:
                self.refused += 1
                raise psycopg.OperationalError("connection failed: server closed the connection")
            return real()

        return connection


async def test_presses_relayed_while_the_store_is_down_reach_the_replicas_once_it_is_back(
    db: PgDatabase, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    outage = Outage(db, monkeypatch)
    presses = Presses(CHANNEL)
    heard: list[Press] = []
    presses.join(heard.append)
    async with anyio.create_task_group() as group:
        anywhere = Anywhere(
            db, postgres_url, unsent_pair(CHANNEL, group), "a", 600, presses=presses
        )
        try:
            async with anywhere.running():
                assert anywhere.drain is not None
                with anyio.fail_after(GUARD):
                    await anywhere.drain.listening.wait()
                outage.down = True
                sent = [
                    Press(f"t{n}", "D1", "40", verdict, "U1", "Ann")
                    for n, verdict in enumerate(VERDICTS)
                ]
                for press in sent:
                    assert presses.relay(press)
                await until(lambda: outage.refused >= 2, GUARD)  # refused, and tried again
                assert heard == []
                outage.down = False
                await until(lambda: len(heard) == len(sent), GUARD)
                assert heard == sent, "each once, in the order pressed"
        finally:
            anywhere.inlet.close()
        group.cancel_scope.cancel()


class Deaf:
    """The LISTEN connections made with ``url`` (one replica's) cut, and not made again
    until :meth:`hears` (the network between that replica and the server down)."""

    def __init__(self, db: PgDatabase, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self._db = db
        self._name = url.rsplit("application_name=", 1)[1]
        self._back = anyio.Event()
        self._back.set()
        self.waiting = 0
        """Connections tried while cut."""

        @asynccontextmanager
        async def gated(to: str, *channels: str) -> AsyncIterator[Any]:
            if to == url and not self._back.is_set():
                self.waiting += 1
                await self._back.wait()
            async with listening(to, *channels) as conn:
                yield conn

        monkeypatch.setattr(listener, "listening", gated)

    async def cut(self) -> None:
        self._back = anyio.Event()
        async with self._db.transaction() as conn:
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = %s",
                (self._name,),
            )

    def hears(self) -> None:
        self._back.set()


async def test_a_press_written_while_the_asking_replica_is_not_listening_decides_its_question(
    db: PgDatabase, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replica A asks; its LISTEN connection is cut and kept from coming back while B
    relays the press (B hears it: it was written and announced). Once A listens again
    the question is decided by that press; the slow safety read never runs here."""
    monkeypatch.setattr(press_relay, "PRESSES_AGAIN_EVERY", 3600.0)
    asker_url = f"{postgres_url}&application_name=asker-{uuid4().hex[:8]}"
    deaf = Deaf(db, asker_url, monkeypatch)
    seats = Seats(CHANNEL, People(), SecurityContext.of("owner"), "U1", allowed=("U1",))
    shown: list[QuestionView[None] | OutcomeView[None]] = []
    asking_side = Asking[str, None](lambda chat, view: shown.append(view), CHANNEL, seats)
    owner_side = Asking[str, None](lambda chat, view: None, CHANNEL, seats)
    at_a, at_b = Presses(CHANNEL), Presses(CHANNEL)
    at_a.join(asking_side.relayed)
    owner_side.presses = at_b
    heard_at_b: list[Press] = []
    at_b.join(heard_at_b.append)
    token, view = Asking.token(), QuestionView[None]("Allow?", None)
    request = ApprovalRequest("fs__write_file", {}, SessionId("s1"), caller="owner")
    answers: list[ApprovalAnswer] = []

    async def ask() -> None:
        answers.append(await asking_side.ask("D1", request, token, view))

    async with anyio.create_task_group() as group:
        a = Anywhere(db, asker_url, unsent_pair(CHANNEL, group), "a", 600, presses=at_a)
        b = Anywhere(db, postgres_url, unsent_pair(CHANNEL, group), "b", 600, presses=at_b)
        try:
            async with a.running(), b.running():
                assert a.drain is not None
                assert b.drain is not None
                with anyio.fail_after(GUARD):
                    await a.drain.listening.wait()
                    await b.drain.listening.wait()
                group.start_soon(ask)
                # (Not wait_all_tasks_blocked: the replicas' and the pool's own tasks may
                # never all be blocked at once, and it waited for that with no bound.)
                await until(lambda: len(shown) == 1, GUARD)  # asked, and waiting for a press
                view.shown("40")
                await deaf.cut()
                await until(lambda: deaf.waiting == 1, GUARD)  # A noticed, and cannot listen again
                said = owner_side.answer(token, "D1", "40", "approved", user="U1", who="Ann")
                assert said == RELAYED
                await until(lambda: len(heard_at_b) == 1, GUARD)  # written and announced
                assert answers == [], "A heard nothing"
                deaf.hears()
                await until(lambda: len(answers) == 1, GUARD)
                assert (answers[0].verdict, answers[0].decided_by) == ("approved", "slack:U1")
                assert isinstance(shown[-1], OutcomeView)
        finally:
            a.inlet.close()
            b.inlet.close()
        group.cancel_scope.cancel()
