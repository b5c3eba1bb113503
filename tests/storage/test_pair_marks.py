"""A ``pair`` command reaches the daemon's channel marks on the database ``bot.toml``
names, SQLite or PostgreSQL, without making one: what it writes there the daemon reads
at its next start."""

from __future__ import annotations

from pathlib import Path

import pytest

from thalos_bot.channels.admission.pair_marks import daemon_marks
from thalos_bot.config.loader import ConfigError
from thalos_bot.domain.ids import ChannelId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.chat_marks import PgChatMarks
from thalos_bot.storage.pg.database import PgDatabase

pytestmark = pytest.mark.anyio
EMAIL = ChannelId("email")


def bot_toml(folder: Path, storage: str = "") -> Path:
    path = folder / "bot.toml"
    path.write_text(f'state_dir = "state"\n{storage}', encoding="utf-8")
    return path


async def test_a_daemon_that_never_ran_has_no_marks_and_none_are_made(tmp_path: Path) -> None:
    async with daemon_marks(bot_toml(tmp_path)) as marks:
        assert marks is None
    assert not (tmp_path / "state").exists()


async def test_what_pairing_writes_the_sqlite_daemon_reads(tmp_path: Path) -> None:
    path = bot_toml(tmp_path)
    (tmp_path / "state").mkdir()
    async with await Database.open(tmp_path / "state" / "thalos.db", migrations=ALL_MIGRATIONS):
        pass  # the daemon's first start
    async with daemon_marks(path) as marks:
        assert marks is not None
        await marks.raise_marks(EMAIL, {"done <a@example.org>": 1})
    async with await Database.open(
        tmp_path / "state" / "thalos.db", migrations=ALL_MIGRATIONS
    ) as db:
        assert await SqliteChatMarks(db).load(EMAIL) == {"done <a@example.org>": 1}


async def test_what_pairing_writes_the_postgresql_daemon_reads(
    tmp_path: Path, migrated_url: str
) -> None:
    path = bot_toml(tmp_path, f'[storage]\nurl = "{migrated_url}"\n')
    async with daemon_marks(path) as marks:
        assert marks is not None
        await marks.raise_marks(EMAIL, {"done <a@example.org>": 1})
    async with await PgDatabase.open(migrated_url, apply=False) as db:
        assert await PgChatMarks(db).load(EMAIL) == {"done <a@example.org>": 1}


async def test_an_unreachable_server_is_a_configuration_error_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THALOS_DATABASE_PASSWORD", "hunter2-not-shown")
    url = "postgresql://bot@127.0.0.1:1/thalos"
    with pytest.raises(ConfigError) as raised:
        async with daemon_marks(bot_toml(tmp_path, f'[storage]\nurl = "{url}"\n')):
            pass
    [problem] = raised.value.problems
    assert "the daemon's state cannot be opened" in problem
    assert "hunter2" not in problem
