"""The chats' highest message ids: a mark only grows, each channel has its own, and a
reopened database still has them."""

from __future__ import annotations

from pathlib import Path

import pytest

from thalos_bot.domain.ids import ChannelId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database

pytestmark = pytest.mark.anyio

TG, OTHER = ChannelId("telegram"), ChannelId("other")


async def test_marks_only_grow_per_channel_and_survive_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "thalos.db"
    async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
        marks = SqliteChatMarks(db)
        assert await marks.load(TG) == {}
        await marks.raise_marks(TG, {"42": 7, "-100": 3})
        await marks.raise_marks(TG, {"42": 5, "-100": 9})  # 5 is lower: 7 stays
        await marks.raise_marks(OTHER, {"42": 1})
        await marks.raise_marks(TG, {})
    async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
        marks = SqliteChatMarks(db)
        assert await marks.load(TG) == {"42": 7, "-100": 9}
        assert await marks.load(OTHER) == {"42": 1}
