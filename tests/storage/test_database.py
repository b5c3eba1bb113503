"""The shared SQLite database: configuration, migrations, transactions, errors."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from structlog.testing import capture_logs

from thalos_bot.storage.database import (
    Database,
    DatabaseError,
    decode_time,
    encode_time,
    fetch_all,
    fetch_one,
)
from thalos_bot.storage.migrations import (
    MIGRATIONS,
    Migration,
    MigrationError,
    SchemaTooNewError,
    pending_migrations,
    schema_status,
    split_statements,
)

pytestmark = pytest.mark.anyio

NAMES = [m.name for m in MIGRATIONS]


class AbandonError(Exception):
    pass


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with await Database.open(tmp_path / "bot.db") as database:
        async with database.transaction() as conn:
            await conn.execute("CREATE TABLE notes (body TEXT NOT NULL)")
        yield database


async def _notes(db: Database) -> list[str]:
    async with db.read() as conn:
        return [r["body"] for r in await fetch_all(conn, "SELECT body FROM notes ORDER BY rowid")]


async def _pragma(db: Database, name: str) -> object:
    async with db.read() as conn:
        row = await fetch_one(conn, f"PRAGMA {name}")
    assert row is not None
    return row[0]


# --- opening -------------------------------------------------------------------------


async def test_open_creates_the_directory_and_configures_the_connection(tmp_path: Path) -> None:
    path = tmp_path / "state" / "nested" / "bot.db"
    async with await Database.open(path) as db:
        assert path.is_file()
        assert db.path == path
        assert db.journal_mode == "wal"
        assert await _pragma(db, "journal_mode") == "wal"
        assert await _pragma(db, "foreign_keys") == 1
        assert await _pragma(db, "synchronous") == 1  # NORMAL
        assert await _pragma(db, "busy_timeout") == 5000


async def test_fts5_is_available_and_usable(db: Database) -> None:
    assert db.has_fts5
    async with db.transaction() as conn:
        await conn.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
        await conn.execute("INSERT INTO docs (body) VALUES ('the quick brown fox')")
    async with db.read() as conn:
        rows = await fetch_all(conn, "SELECT body FROM docs WHERE docs MATCH 'brown'")
    assert [r["body"] for r in rows] == ["the quick brown fox"]


async def test_foreign_keys_are_enforced(db: Database) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        async with db.transaction() as conn:
            await conn.execute(
                "INSERT INTO session_messages (session_id, seq, role, content)"
                " VALUES ('s_missing', 0, 'user', '{}')"
            )


async def test_in_memory_database_is_migrated() -> None:
    async with await Database.open_memory() as db:
        assert db.path is None
        assert (await schema_status(db)).up_to_date
        assert db.applied_on_open == tuple(NAMES)


async def test_a_file_that_is_not_a_database_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    path.write_bytes(b"these are not the bytes you are looking for\n" * 200)
    with pytest.raises(DatabaseError) as caught:
        await Database.open(path)
    assert caught.value.path == str(path)
    assert str(path) in str(caught.value)
    assert "not a SQLite database" in str(caught.value)


async def test_an_empty_file_is_refused_not_taken_for_a_new_database(tmp_path: Path) -> None:
    path = tmp_path / "thalos.db"
    path.write_bytes(b"")  # truncated, or a restore that copied nothing
    with pytest.raises(DatabaseError) as caught:
        await Database.open(path)
    assert "empty (0 bytes)" in caught.value.reason
    assert path.stat().st_size == 0, "nothing written into it"
    path.unlink()
    db = await Database.open(path)  # gone: a new database, as the error says
    await db.aclose()


async def test_an_unusable_directory_gives_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    path = blocker / "sub" / "bot.db"
    with pytest.raises(DatabaseError) as caught:
        await Database.open(path)
    assert caught.value.path == str(path)
    assert "directory" in caught.value.reason


async def test_a_closed_database_refuses_use_and_closes_once(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "bot.db")
    await db.aclose()
    await db.aclose()
    assert db.closed
    with pytest.raises(DatabaseError, match="closed"):
        async with db.read():
            pass


# --- migrations ----------------------------------------------------------------------


async def test_migrations_are_recorded_in_order(db: Database) -> None:
    status = await schema_status(db)
    assert [a.name for a in status.applied] == NAMES
    assert status.current == NAMES[-1]
    assert status.pending == ()
    assert status.unknown == ()
    assert all(a.applied_at.utcoffset() == timedelta(0) for a in status.applied)
    assert await pending_migrations(db) == []


async def test_reopening_applies_nothing_new(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    async with await Database.open(path) as db:
        assert db.applied_on_open == tuple(NAMES)
        before = await schema_status(db)
    async with await Database.open(path) as db:
        assert db.applied_on_open == ()
        assert await schema_status(db) == before


async def test_pending_migrations_are_applied_on_the_next_open(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    async with await Database.open(path, migrations=MIGRATIONS[:1]) as db:
        assert [m.name for m in await pending_migrations(db)] == NAMES[1:]
        assert (await schema_status(db, MIGRATIONS)).current == NAMES[0]
    async with await Database.open(path) as db:
        assert db.applied_on_open == tuple(NAMES[1:])
        assert [a.name for a in (await schema_status(db)).applied] == NAMES


async def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    async with await Database.open(path) as db, db.transaction() as conn:
        await conn.execute(
            "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
            ("9999_from_the_future", encode_time(datetime.now(UTC))),
        )
    with pytest.raises(SchemaTooNewError) as caught:
        await Database.open(path)
    assert caught.value.unknown == ("9999_from_the_future",)
    assert str(path) in str(caught.value)
    # Old code (knowing fewer migrations) on a current database is refused too.
    async with await Database.open(tmp_path / "other.db"):
        pass
    with pytest.raises(SchemaTooNewError) as old_code:
        await Database.open(tmp_path / "other.db", migrations=MIGRATIONS[:1])
    assert old_code.value.unknown == tuple(NAMES[1:])


async def test_a_failing_migration_is_rolled_back_and_stops_the_open(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    broken = [
        *MIGRATIONS,
        Migration("0900_half_done", "CREATE TABLE half (x); INSERT INTO missing VALUES (1);"),
        Migration("0901_never_reached", "CREATE TABLE never (x);"),
    ]
    with pytest.raises(MigrationError) as caught:
        await Database.open(path, migrations=broken)
    assert caught.value.migration == "0900_half_done"
    async with await Database.open(path) as db:
        assert [a.name for a in (await schema_status(db)).applied] == NAMES
        async with db.read() as conn:
            tables = await fetch_all(
                conn, "SELECT name FROM sqlite_master WHERE name IN ('half', 'never')"
            )
        assert tables == []


def test_split_statements_respects_strings_comments_and_triggers() -> None:
    script = """
        CREATE TABLE t (x TEXT DEFAULT 'a;b'); -- a comment; with a semicolon
        CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN
            UPDATE t SET x = 'c;d' WHERE rowid = new.rowid;
        END;
        INSERT INTO t (x) VALUES ('e')
    """
    statements = split_statements(script)
    assert len(statements) == 3
    assert statements[0].startswith("CREATE TABLE t")
    assert statements[1].startswith("-- a comment")
    assert statements[1].rstrip().endswith("END;")
    assert statements[2] == "INSERT INTO t (x) VALUES ('e');"
    assert split_statements("SELECT 1; -- trailing note") == ["SELECT 1;", "-- trailing note\n;"]
    assert split_statements("  ;\n ; ") == []
    with pytest.raises(ValueError, match="incomplete"):
        split_statements("INSERT INTO t (x) VALUES ('unterminated;")


def test_shipped_migration_names_are_unique_and_ordered() -> None:
    assert len(set(NAMES)) == len(NAMES)
    assert sorted(NAMES) == NAMES


# --- transactions --------------------------------------------------------------------


async def test_an_exception_rolls_the_transaction_back(db: Database) -> None:
    async def insert_then_fail() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO notes VALUES ('lost')")
            raise AbandonError

    with pytest.raises(AbandonError):
        await insert_then_fail()
    assert await _notes(db) == []


async def test_cancelling_inside_a_transaction_rolls_it_back(db: Database) -> None:
    with anyio.CancelScope() as scope:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO notes VALUES ('first')")
            scope.cancel()
            await conn.execute("INSERT INTO notes VALUES ('second')")
    assert scope.cancelled_caught
    assert await _notes(db) == []
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO notes VALUES ('kept')")
    assert await _notes(db) == ["kept"]


async def test_cancelling_a_task_mid_transaction_rolls_it_back(db: Database) -> None:
    inside = anyio.Event()

    async def writer() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO notes VALUES ('lost')")
            inside.set()
            await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await inside.wait()
        tg.cancel_scope.cancel()

    assert await _notes(db) == []
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO notes VALUES ('kept')")
    assert await _notes(db) == ["kept"]


async def test_concurrent_transactions_do_not_interleave(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute("CREATE TABLE counter (n INTEGER NOT NULL)")
        await conn.execute("INSERT INTO counter VALUES (0)")

    async def bump() -> None:
        async with db.transaction() as conn:
            row = await fetch_one(conn, "SELECT n FROM counter")
            assert row is not None
            await anyio.lowlevel.checkpoint()  # invite another task to interleave
            await conn.execute("UPDATE counter SET n = ?", (row["n"] + 1,))

    async with anyio.create_task_group() as tg:
        for _ in range(50):
            tg.start_soon(bump)

    async with db.read() as conn:
        row = await fetch_one(conn, "SELECT n FROM counter")
    assert row is not None
    assert row["n"] == 50


async def test_a_read_never_sees_an_unfinished_transaction(db: Database) -> None:
    inserted = anyio.Event()
    finish = anyio.Event()
    seen: list[str] = []

    async def writer() -> None:
        with contextlib.suppress(AbandonError):
            async with db.transaction() as conn:
                await conn.execute("INSERT INTO notes VALUES ('uncommitted')")
                inserted.set()
                await finish.wait()
                raise AbandonError

    async def reader() -> None:
        seen.extend(await _notes(db))

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await inserted.wait()
        tg.start_soon(reader)
        await anyio.wait_all_tasks_blocked()
        finish.set()

    assert seen == []


# --- timestamps ----------------------------------------------------------------------


def test_timestamps_round_trip_to_the_microsecond_in_utc() -> None:
    local = datetime(2025, 3, 30, 1, 59, 59, 999_999, tzinfo=timezone(timedelta(hours=2)))
    back = decode_time(encode_time(local))
    assert back == local
    assert back.utcoffset() == timedelta(0)
    assert back.microsecond == 999_999
    earlier = datetime(2025, 3, 29, 23, 0, tzinfo=UTC)
    assert encode_time(earlier) < encode_time(local)
    with pytest.raises(ValueError, match="timezone-aware"):
        encode_time(datetime(2025, 1, 1))  # noqa: DTZ001


# --- logs ----------------------------------------------------------------------------


async def test_opening_logs_each_applied_migration_as_an_event() -> None:
    with capture_logs() as logs:
        async with await Database.open_memory():
            pass
    applied = [e["migration"] for e in logs if e["event"] == "migration-applied"]
    assert applied == NAMES
    opened = [e for e in logs if e["event"] == "database-opened"]
    assert opened[0]["fts5"] is True
    assert opened[0]["migrations_applied"] == len(NAMES)
