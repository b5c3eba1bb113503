"""The chats' highest message ids: a mark only grows, each channel has its own, and a
reopened database still has them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
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


async def test_marks_not_raised_for_a_while_are_pruned_but_the_kept_ones(tmp_path: Path) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        marks = SqliteChatMarks(db, clock=lambda: now[0])
        await marks.raise_marks(TG, {"42": 7, "-100": 3, "account": 9})
        await marks.raise_marks(OTHER, {"42": 1})
        now[0] += timedelta(days=40)
        await marks.raise_marks(TG, {"-100": 4})  # raised: its clock starts again
        await marks.raise_marks(TG, {"42": 6})  # lower: not raised, stays old
        now[0] += timedelta(days=60)
        assert await marks.prune(TG, timedelta(days=90), keep=("account",)) == 1
        assert await marks.load(TG) == {"-100": 4, "account": 9}
        assert await marks.load(OTHER) == {"42": 1}, "another channel's are its own"
        assert await marks.prune(TG, timedelta(days=90)) == 1, "nothing kept: all old go"
        assert await marks.load(TG) == {"-100": 4}
        now[0] += timedelta(days=100)
        assert await marks.prune(TG, timedelta(days=90)) == 1
        assert await marks.load(TG) == {}
