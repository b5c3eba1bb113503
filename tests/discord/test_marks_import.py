"""The catch-up marks an older version kept in ``discord-marks.json`` move into the host's
database once (so an upgrade reads back what was said while it was down)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.domain.ids import ChannelId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database
from thalos_bot_discord.receiver import LEGACY_FILE, imported

pytestmark = pytest.mark.anyio


async def test_the_old_file_is_read_into_the_database_once(tmp_path: Path) -> None:
    (tmp_path / LEGACY_FILE).write_text(json.dumps({"111": 5, "222": 9, "bad": 3}))
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        book = MarkBook(SqliteChatMarks(db), ChannelId("discord"))
        await book.load()
        imported(tmp_path, book)
        assert book.known() == {"111": 5, "222": 9}
        await book.flush()
        again = MarkBook(SqliteChatMarks(db), ChannelId("discord"))
        assert await again.load() == {"111": 5, "222": 9}
    assert not (tmp_path / LEGACY_FILE).exists()


async def test_an_unreadable_old_file_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / LEGACY_FILE).write_text("{not json")
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        book = MarkBook(SqliteChatMarks(db), ChannelId("discord"))
        imported(tmp_path, book)
        assert book.known() == {}
    assert (tmp_path / LEGACY_FILE).exists(), "kept for the operator to look at"
