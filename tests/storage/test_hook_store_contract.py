"""The hook deliveries store, the same on SQLite and PostgreSQL: a delivery id is let in
once; a body hash only within the window; claims take each open row once, a dead
daemon's rows are taken back (one more attempt, then given up)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.storage.backends import BACKENDS, on
from thalos_bot.domain.address import Address
from thalos_bot.domain.security import SecurityContext
from thalos_bot.hooks.store import HookStore, NewDelivery, SqliteHookStore
from thalos_bot.storage.pg.hooks import PgHookStore

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[HookStore]:
    async with on(request, tmp_path, SqliteHookStore, PgHookStore) as opened:
        yield opened


def delivery(key: str) -> NewDelivery:
    return NewDelivery(
        "gh",
        key,
        "assistant",
        SecurityContext.of("owner", ["ops"]),
        Address.parse("telegram:7"),
        "t",
    )


async def test_a_delivery_id_is_let_in_once(store: HookStore) -> None:
    assert await store.receive(delivery("id:1"), NOW, 300)
    assert not await store.receive(delivery("id:1"), NOW + timedelta(days=3), 300)
    assert await store.receive(delivery("body:aa"), NOW, 300)
    assert not await store.receive(delivery("body:aa"), NOW + timedelta(seconds=200), 300)
    assert await store.receive(delivery("body:aa"), NOW + timedelta(seconds=400), 300)


async def test_claims_take_each_row_once_and_a_dead_daemons_rows_back(store: HookStore) -> None:
    await store.receive(delivery("id:1"), NOW, 300)
    [first] = await store.claim(NOW, "a", 60)
    assert (first.state, first.attempts, first.caller.roles) == ("running", 1, frozenset({"ops"}))
    assert await store.claim(NOW, "b", 60) == []
    [again] = await store.claim(NOW + timedelta(seconds=61), "b", 60)
    assert (again.attempts, again.gave_up) == (2, False)
    [last] = await store.claim(NOW, "c", 60, everyone=True)
    assert last.gave_up
    await store.finish(last.id, "notice", "notice", NOW)
    [kept] = await store.claim(NOW, "d", 60, everyone=True)
    assert (kept.state, kept.result, kept.attempts) == ("finished", "notice", 3)
    await store.done(kept.id, NOW)
    assert await store.claim(NOW, "e", 60, everyone=True) == []
