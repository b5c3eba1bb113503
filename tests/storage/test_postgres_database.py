"""The PostgreSQL database itself: migrations under an advisory lock, the password from
the environment only, clear errors, and commits that serialize per session."""

from __future__ import annotations

import secrets
import socket
from datetime import UTC, datetime

import anyio
import pytest

from tests.storage.conftest import PostgresSchema, unavailable
from tests.storage.postgres import PASSWORD_ROLE
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.messages import Message, TextBlock
from thalos_bot.storage.database import DatabaseError
from thalos_bot.storage.migrations import Migration, MigrationError, SchemaTooNewError
from thalos_bot.storage.pg.database import PASSWORD_ENV, PgDatabase, fetch_all, redacted
from thalos_bot.storage.pg.migrate import applied_migrations
from thalos_bot.storage.pg.schema import PG_MIGRATIONS
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.storage.protocol import SessionRecord

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SID = SessionId("s_pg")


async def test_migrations_are_recorded_in_order_and_applied_once(postgres_url: str) -> None:
    async with await PgDatabase.open(postgres_url) as db:
        assert list(db.applied_on_open) == [m.name for m in PG_MIGRATIONS]
        assert await applied_migrations(db) == [m.name for m in PG_MIGRATIONS]
    async with await PgDatabase.open(postgres_url) as again:
        assert again.applied_on_open == ()


async def test_replicas_starting_together_apply_each_migration_once(postgres_url: str) -> None:
    opened: list[PgDatabase] = []

    async def start() -> None:
        opened.append(await PgDatabase.open(postgres_url, pool_size=2))

    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(start)
    try:
        applied = [name for db in opened for name in db.applied_on_open]
        assert sorted(applied) == sorted(m.name for m in PG_MIGRATIONS), "each exactly once"
        assert await applied_migrations(opened[0]) == [m.name for m in PG_MIGRATIONS]
    finally:
        for db in opened:
            await db.aclose()


async def test_a_database_from_a_newer_version_is_refused(postgres_url: str) -> None:
    async with await PgDatabase.open(postgres_url) as db, db.transaction() as conn:
        await conn.execute("INSERT INTO schema_migrations (name) VALUES ('9999_from_the_future')")
    with pytest.raises(SchemaTooNewError) as caught:
        await PgDatabase.open(postgres_url)
    assert caught.value.unknown == ("9999_from_the_future",)
    assert "upgrade thalos-bot" in str(caught.value)


async def test_a_failing_migration_is_rolled_back_and_stops_the_rest(postgres_url: str) -> None:
    broken = [
        Migration("0001_fine", "CREATE TABLE fine (x INT);"),
        Migration("0002_broken", "CREATE TABLE half (x INT); SELECT no_such_function();"),
        Migration("0003_never", "CREATE TABLE never (x INT);"),
    ]
    with pytest.raises(MigrationError) as caught:
        await PgDatabase.open(postgres_url, migrations=broken)
    assert caught.value.migration == "0002_broken"
    async with await PgDatabase.open(postgres_url, migrations=broken[:1]) as db:
        assert await applied_migrations(db) == ["0001_fine"]
        async with db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT to_regclass('half') AS half, to_regclass('never') AS never",
            )
        assert rows == [{"half": None, "never": None}]


async def test_an_unreachable_server_is_a_database_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://nobody@127.0.0.1:{port}/thalos"
    with pytest.raises(DatabaseError) as caught:
        await PgDatabase.open(url, connect_timeout=2)
    assert caught.value.path == url
    assert caught.value.reason.startswith("cannot connect (")


async def test_the_password_comes_from_the_environment(
    postgres_schema: PostgresSchema, monkeypatch: pytest.MonkeyPatch
) -> None:
    role, password = f"pw_{postgres_schema.name}", secrets.token_hex(12)
    postgres_schema.sql(
        f"CREATE ROLE {role} LOGIN PASSWORD '{password}' IN ROLE {PASSWORD_ROLE};"
        f" GRANT ALL ON SCHEMA {postgres_schema.name} TO {role}"
    )
    try:
        await _password_logins(postgres_schema.url(role), password, monkeypatch)
    finally:
        postgres_schema.sql(f"DROP OWNED BY {role}; DROP ROLE {role}")


async def _password_logins(url: str, password: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", "/nonexistent")
    with pytest.raises(DatabaseError) as refused:
        await PgDatabase.open(url, connect_timeout=5)
    assert "cannot connect" in refused.value.reason

    monkeypatch.setenv(PASSWORD_ENV, password)
    async with await PgDatabase.open(url) as db:
        assert len(db.applied_on_open) == len(PG_MIGRATIONS)
    monkeypatch.delenv(PASSWORD_ENV)
    monkeypatch.setenv("PGPASSWORD", password)  # libpq's own variable works too
    async with await PgDatabase.open(url) as db:
        assert db.applied_on_open == ()
    monkeypatch.setenv("PGPASSWORD", "wrong")
    with pytest.raises(DatabaseError) as wrong:
        await PgDatabase.open(url, connect_timeout=5)
    assert password not in str(wrong.value)


def test_a_password_in_a_url_is_never_shown() -> None:
    assert redacted("postgresql://bot:s3cret@db:5432/x") == "postgresql://bot:***@db:5432/x"
    assert redacted("postgresql://bot@db/x") == "postgresql://bot@db/x"


async def test_concurrent_commits_to_one_session_from_two_replicas_serialize(
    postgres_url: str,
) -> None:
    async with (
        await PgDatabase.open(postgres_url, pool_size=4) as one,
        await PgDatabase.open(postgres_url, pool_size=4) as two,
    ):
        first, second = PgSessionStore(one), PgSessionStore(two)
        await first.create(SessionRecord(SID, AgentId("helper"), "alice", "open", T0, T0))

        async def turn(store: PgSessionStore, index: int) -> None:
            await store.commit_turn(
                SID,
                [Message.user(f"q{index}"), Message("assistant", (TextBlock(f"a{index}"),))],
                TokenUsage(1, 1),
                T0,
            )

        async with anyio.create_task_group() as group:
            for index in range(16):
                group.start_soon(turn, first if index % 2 else second, index)
        record = await second.get(SID)
        history = await first.history(SID)
    assert record is not None
    assert (record.turns, record.usage) == (16, TokenUsage(16, 16))
    assert len(history) == 32
    assert [m.role for m in history] == ["user", "assistant"] * 16
    pairs = {(history[i].text, history[i + 1].text) for i in range(0, 32, 2)}
    assert pairs == {(f"q{i}", f"a{i}") for i in range(16)}, "each turn stays whole"


def test_a_server_that_cannot_start_skips_locally_and_fails_under_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no binaries"):
        unavailable("no binaries")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="under CI: no binaries"):
        unavailable("no binaries")


async def test_no_connection_is_held_across_a_model_call(postgres_url: str) -> None:
    """A turn loads its context, waits for the model, then commits: while it waits it
    holds no connection, so with a pool of one another conversation still gets its
    turn in (and would wait for the pool's timeout if the first held it)."""
    other = SessionId("s_other")
    async with await PgDatabase.open(postgres_url, pool_size=1, connect_timeout=5) as db:
        store = PgSessionStore(db)
        for sid in (SID, other):
            await store.create(SessionRecord(sid, AgentId("helper"), "alice", "open", T0, T0))
        model_called, other_done = anyio.Event(), anyio.Event()
        held_during_call: list[int] = []

        async def slow_turn() -> None:
            await store.load_context(SID)
            held_during_call.append(db.connections_in_use)
            model_called.set()
            await other_done.wait()  # the model call, for as long as the other turn takes
            await store.commit_turn(SID, [Message.user("slow")], TokenUsage(1), T0)

        async def quick_turn() -> None:
            await model_called.wait()
            await store.load_context(other)
            await store.commit_turn(other, [Message.user("quick")], TokenUsage(1), T0)
            other_done.set()

        async with anyio.create_task_group() as group:
            group.start_soon(slow_turn)
            group.start_soon(quick_turn)
        assert held_during_call == [0]
        assert db.connections_in_use == 0
        assert [m.text for m in await store.history(other)] == ["quick"]
        assert [m.text for m in await store.history(SID)] == ["slow"]
