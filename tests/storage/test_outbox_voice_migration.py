"""``0511_outbox_voice`` on SQLite rebuilds the outbox (a CHECK cannot be altered): the
rows written before it keep everything, in their order."""

from __future__ import annotations

from pathlib import Path

import pytest

from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database

pytestmark = pytest.mark.anyio


async def test_rows_written_before_the_migration_survive_it(tmp_path: Path) -> None:
    path = tmp_path / "thalos.db"
    cut = next(i for i, m in enumerate(ALL_MIGRATIONS) if m.name == "0511_outbox_voice")
    before = await Database.open(path, migrations=ALL_MIGRATIONS[:cut])
    async with before, before.transaction() as conn:
        for key, state in (("b", "pending"), ("a", "delivered")):
            await conn.execute(
                "INSERT INTO outbox (id, channel_id, conversation_id, kind, text, state,"
                " progress, created_at, updated_at) VALUES (?, 'tg', '42', 'answer',"
                " 'hi', ?, '{\"parts_done\": 1}', 't0', 't1')",
                (key, state),
            )
    async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
        async with db.read() as conn:
            cursor = await conn.execute(
                "SELECT id, kind, text, state, progress, created_at FROM outbox ORDER BY rowid"
            )
            rows = [tuple(r) for r in await cursor.fetchall()]
        async with db.transaction() as conn:
            await conn.execute(
                "INSERT INTO outbox (id, channel_id, conversation_id, kind, text, created_at,"
                " updated_at) VALUES ('c', 'tg', '42', 'voice', '{}', 't2', 't2')"
            )
    assert rows == [
        ("b", "answer", "hi", "pending", '{"parts_done": 1}', "t0"),
        ("a", "answer", "hi", "delivered", '{"parts_done": 1}', "t0"),
    ]
