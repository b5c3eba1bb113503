"""An approval press relayed while PostgreSQL refuses it, on a real PostgreSQL: the
replica that heard it writes it again until the store takes it, in the order pressed,
and every replica's ``Asking`` hears it then (here: this replica's own, which hears
what it relays as the others do)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

import anyio
import psycopg
import pytest

from tests.cluster.unsent import unsent_pair
from thalos_bot.channels.approvals.relay import Press, Presses
from thalos_bot.service.anywhere import Anywhere
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import Connection, PgDatabase
from thalos_bot.tools.approval import Verdict

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
    """The replica's pool refusing every transaction as a server out of reach does
    (``OperationalError`` on taking a connection), while ``down``."""

    def __init__(self, db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
        self.down = False
        self.refused = 0
        real = db.transaction

        def transaction() -> AbstractAsyncContextManager[Connection]:
            if self.down:
                self.refused += 1
                raise psycopg.OperationalError("connection failed: server closed the connection")
            return real()

        monkeypatch.setattr(db, "transaction", transaction)


async def until(check: Callable[[], bool]) -> None:
    with anyio.fail_after(GUARD):
        while not check():
            await anyio.sleep(0.05)


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
                await until(lambda: outage.refused >= 2)  # refused, and tried again
                assert heard == []
                outage.down = False
                await until(lambda: len(heard) == len(sent))
                assert heard == sent, "each once, in the order pressed"
        finally:
            anywhere.inlet.close()
        group.cancel_scope.cancel()
