"""The API keys and the ``/voice`` choices, the same on SQLite and PostgreSQL: a key is
found by itself only (its hash is kept, not it), revoked once, and says when it expired;
a conversation's voice choice is kept and replaced; an API conversation's history digest too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.storage.backends import BACKENDS, on
from thalos_bot.storage.api_keys import SqliteApiKeys, key_hash
from thalos_bot.storage.pg.api_keys import PgApiKeys
from thalos_bot.storage.pg.run_costs import PgRunCosts
from thalos_bot.storage.pg.voice_modes import PgVoiceModes
from thalos_bot.storage.run_costs import SqliteRunCosts
from thalos_bot.storage.voice_modes import SqliteVoiceModes

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
async def keys(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqliteApiKeys]:
    async with on(request, tmp_path, SqliteApiKeys, PgApiKeys) as opened:
        yield opened


@pytest.fixture(params=BACKENDS)
async def modes(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqliteVoiceModes]:
    async with on(request, tmp_path, SqliteVoiceModes, PgVoiceModes) as opened:
        yield opened


async def test_a_key_is_found_by_itself_revoked_once_and_expires(keys: SqliteApiKeys) -> None:
    made, key = await keys.create("ana", None, NOW, None)
    short, short_key = await keys.create("ben", "coder", NOW, NOW + timedelta(days=1))
    found = await keys.find(key)
    assert found is not None
    assert (found.id, found.person, found.agent) == (made.id, "ana", None)
    assert found.usable(NOW) is None
    assert await keys.find(key_hash(key)) is None  # the stored hash is not a key
    assert await keys.find(key + "x") is None
    assert await keys.find("sk-" + key) is None
    later = await keys.find(short_key)
    assert later is not None
    assert later.usable(NOW + timedelta(days=2)) == "this API key has expired"
    assert await keys.revoke(made.id, NOW)
    assert not await keys.revoke(made.id, NOW)  # once
    again = await keys.find(key)
    assert again is not None
    assert again.usable(NOW) == "this API key was revoked"
    assert sorted(k.id for k in await keys.listing()) == sorted([made.id, short.id])


async def test_a_voice_choice_is_kept_per_conversation(modes: SqliteVoiceModes) -> None:
    assert await modes.get("telegram", "42") is None
    await modes.set("telegram", "42", "on")
    await modes.set("telegram", "43", "off")
    await modes.set("telegram", "42", "auto")
    assert await modes.get("telegram", "42") == "auto"
    assert await modes.get("telegram", "43") == "off"
    assert await modes.get("matrix", "42") is None


@pytest.fixture(params=BACKENDS)
async def costs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqliteRunCosts]:
    async with on(request, tmp_path, SqliteRunCosts, PgRunCosts) as opened:
        yield opened


async def test_a_schedules_recent_runs_come_newest_first(costs: SqliteRunCosts) -> None:
    for minutes, tokens in ((1, 100), (2, 250), (3, 90)):
        await costs.record("sch_a", tokens, NOW + timedelta(minutes=minutes))
    await costs.record("sch_b", 7, NOW)
    assert await costs.recent("sch_a") == [90, 250, 100]
    assert await costs.recent("sch_a", 2) == [90, 250]
    assert await costs.recent("sch_c") == []


async def test_a_schedules_spending_since_a_time_adds_up_its_runs(costs: SqliteRunCosts) -> None:
    berlin = timezone(timedelta(hours=1))
    for minutes, tokens in ((-90, 1_000), (1, 100), (2, 250)):
        await costs.record("sch_a", tokens, NOW + timedelta(minutes=minutes))
    await costs.record("sch_b", 7, NOW)
    assert await costs.spent_since("sch_a", NOW) == 350
    assert await costs.spent_since("sch_a", NOW - timedelta(hours=2)) == 1_350
    assert await costs.spent_since("sch_a", (NOW + timedelta(minutes=2)).astimezone(berlin)) == 250
    assert await costs.spent_since("sch_c", NOW) == 0


async def test_an_api_conversations_history_is_kept_and_replaced(keys: SqliteApiKeys) -> None:
    made, _ = await keys.create("ana", None, NOW, None)
    assert await keys.said("api:1") is None
    await keys.keep_said("api:1", made.id, "digest-a", NOW)
    await keys.keep_said("api:2", made.id, "digest-b", NOW)
    await keys.keep_said("api:1", made.id, "digest-c", NOW + timedelta(seconds=5))
    assert await keys.said("api:1") == "digest-c"
    assert await keys.said("api:2") == "digest-b"
    assert await keys.said("api:3") is None


async def test_a_schedules_runs_keep_their_dollars(costs: SqliteRunCosts) -> None:
    await costs.record("sch_a", 100, NOW, 0.25)
    await costs.record("sch_a", 90, NOW + timedelta(minutes=1))  # a run priced at nothing
    assert await costs.recent_costs("sch_a") == [0.0, 0.25]
    assert await costs.recent("sch_a") == [90, 100]
