"""A replica reads the events another writes when their NOTIFY arrives, not by polling:
with the safety read set to an hour, an event written on one replica still reaches the
page on another, and does again after the listening connection was cut (it listens
again and reads what it missed). On a real PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from tests.cluster.test_web_events import OWNER, db, replica
from thalos_bot.storage.pg.database import PgDatabase, fetch_all
from thalos_bot_web.adapter import WebAdapter

pytestmark = pytest.mark.anyio
__all__ = ["db"]
HOUR = 3600.0


async def seen(page_text: str, adapter: WebAdapter) -> None:
    """Until ``adapter``'s timeline of the owner shows a notice ``page_text``."""
    with anyio.fail_after(10):
        while not any(e.data.get("html") == page_text for e in adapter.timeline(OWNER).events()):
            await anyio.sleep(0.02)


@asynccontextmanager
async def listening(db: PgDatabase) -> AsyncIterator[tuple[WebAdapter, WebAdapter]]:
    """Two replicas: one writing, the other (a tab of the owner open on it) following
    with its safety read an hour apart, once it listens."""
    a, relay_a = replica(db)
    b, relay_b = replica(db)
    b.timeline(OWNER)
    async with anyio.create_task_group() as group:
        group.start_soon(relay_a.run)
        group.start_soon(relay_b.follow, HOUR)
        with anyio.fail_after(10):
            await relay_b.listening.wait()
        yield a, b
        group.cancel_scope.cancel()


async def test_an_event_reaches_another_replica_by_its_notify(db: PgDatabase) -> None:
    async with listening(db) as (a, b):
        a.notice(OWNER, "first")
        await seen("first", b)
        a.notice(OWNER, "second")
        await seen("second", b)


async def test_a_cut_listening_connection_is_made_again(db: PgDatabase) -> None:
    async with listening(db) as (a, b):
        listeners = "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN web_events'"
        async with db.transaction() as conn:
            cut = {r["pid"] for r in await fetch_all(conn, listeners)}
            await conn.execute(
                "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) pid", (list(cut),)
            )
        assert cut, "no listening connection to cut"
        with anyio.fail_after(10):  # until the cut connection is gone
            while True:
                async with db.read() as conn:
                    if not cut & {r["pid"] for r in await fetch_all(conn, listeners)}:
                        break
                await anyio.sleep(0.02)
        a.notice(OWNER, "while it was cut")
        await seen("while it was cut", b)
