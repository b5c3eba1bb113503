"""The chats' highest message ids, run against SQLite and PostgreSQL: a mark only grows,
each channel has its own, and a reopened database still has them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from thalos_bot.channels.marks import ChatMarks
from thalos_bot.domain.ids import ChannelId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.chat_marks import PgChatMarks
from thalos_bot.storage.pg.database import PgDatabase

pytestmark = pytest.mark.anyio

TG, OTHER = ChannelId("telegram"), ChannelId("other")
Opener = Callable[[], AbstractAsyncContextManager[ChatMarks]]


@pytest.fixture(params=["sqlite", "postgres"])
def open_marks(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens the same database again each time it is called."""
    if request.param == "sqlite":

        @asynccontextmanager
        async def sqlite() -> AsyncIterator[ChatMarks]:
            async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
                yield SqliteChatMarks(db)

        return sqlite
    url = request.getfixturevalue("migrated_url")

    @asynccontextmanager
    async def postgres() -> AsyncIterator[ChatMarks]:
        async with await PgDatabase.open(url) as db:
            yield PgChatMarks(db)

    return postgres


async def test_marks_only_grow_per_channel_and_survive_a_reopen(open_marks: Opener) -> None:
    async with open_marks() as marks:
        assert await marks.load(TG) == {}
        await marks.raise_marks(TG, {"42": 7, "-100": 3})
        await marks.raise_marks(TG, {"42": 5, "-100": 9})  # 5 is lower: 7 stays
        await marks.raise_marks(OTHER, {"42": 1})
        await marks.raise_marks(TG, {})
    async with open_marks() as marks:
        assert await marks.load(TG) == {"42": 7, "-100": 9}
        assert await marks.load(OTHER) == {"42": 1}


async def test_marks_raised_at_once_keep_the_highest(open_marks: Opener) -> None:
    async with open_marks() as marks:
        async with anyio.create_task_group() as group:
            for mark in (3, 11, 7, 1, 10):
                group.start_soon(marks.raise_marks, TG, {"42": mark, "43": 20 - mark})
        assert await marks.load(TG) == {"42": 11, "43": 19}


async def test_postgres_prunes_the_marks_not_raised_for_a_while(postgres_url: str) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    async with await PgDatabase.open(postgres_url) as db:
        marks = PgChatMarks(db, clock=lambda: now[0])
        await marks.raise_marks(TG, {"42": 7, "-100": 3, "account": 9})
        await marks.raise_marks(OTHER, {"42": 1})
        now[0] += timedelta(days=40)
        await marks.raise_marks(TG, {"-100": 4})  # raised: its clock starts again
        await marks.raise_marks(TG, {"42": 6})  # lower: not raised, stays old
        now[0] += timedelta(days=60)
        assert await marks.prune(TG, timedelta(days=90), keep=("account",)) == 1
        assert await marks.load(TG) == {"-100": 4, "account": 9}
        assert await marks.load(OTHER) == {"42": 1}, "another channel's are its own"
        now[0] += timedelta(days=60)
        assert await marks.prune(TG, timedelta(days=90)) == 2, "nothing kept: all old go"
        assert await marks.load(TG) == {}
