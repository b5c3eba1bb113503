"""The relayed presses kept in the store (:mod:`thalos_bot.cluster.stored_presses`), on
a real PostgreSQL: each handed on once per replica, whether heard or read again; read
again only within the approval timeout; older rows deleted."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from thalos_bot.cluster.stored_presses import KEPT_MARGIN, StoredPresses
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, listening

pytestmark = pytest.mark.anyio
NOTIFY = "thalos_press_test"


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


async def kept(db: PgDatabase) -> list[str]:
    async with db.read() as conn:
        rows = await fetch_all(conn, "SELECT press FROM approval_presses ORDER BY id")
    return [str(r["press"]) for r in rows]


async def test_each_press_is_handed_on_once_whether_heard_or_read_again(
    db: PgDatabase, postgres_url: str
) -> None:
    writer = StoredPresses(db, "test", NOTIFY, within=120)
    here = StoredPresses(db, "test", NOTIFY, within=120)
    other_channel = StoredPresses(db, "other", NOTIFY, within=120)
    async with listening(postgres_url, NOTIFY) as conn:
        await writer.write("one")
        await writer.write("two")
        await other_channel.write("elsewhere")
        notes = conn.notifies(timeout=5, stop_after=3)
        payloads = [note.payload async for note in notes]
    assert here.heard(payloads[0]) == "one"
    assert here.heard(payloads[0]) is None, "heard twice: handed on once"
    assert await here.again() == ["two"], "the one not heard, of this channel only"
    assert await here.again() == []
    assert here.heard(payloads[1]) is None, "read again already"
    assert here.heard("not a press") is None


async def test_presses_older_than_the_timeout_are_not_read_again_and_are_deleted(
    db: PgDatabase,
) -> None:
    presses = StoredPresses(db, "test", NOTIFY, within=120)
    async with db.transaction() as conn:
        for press, age in (("stale", 130), ("old", 120 + KEPT_MARGIN + 5)):
            await conn.execute(
                "INSERT INTO approval_presses (channel_id, press, pressed_at)"
                " VALUES ('test', %s, now() - make_interval(secs => %s))",
                (press, age),
            )
    assert await presses.again() == [], "past the timeout: no question is open for it"
    await presses.write("new")
    assert await kept(db) == ["stale", "new"], "past the margin too: deleted"
