"""The one LISTEN loop (:func:`~thalos_bot.storage.pg.listener.listen_for_ever`) on a
real server: it hears, reads back after its connection is cut, and logs an outage once
however many attempts it takes."""

from __future__ import annotations

import anyio
import psycopg
import pytest
from structlog.testing import capture_logs

from tests.storage.conftest import PostgresSchema
from thalos_bot.storage.pg.listener import listen_for_ever

pytestmark = pytest.mark.anyio

CHANNEL = "listener_test"


async def test_an_outage_is_logged_once_and_read_back_after(
    migrated_schema: PostgresSchema, migrated_url: str
) -> None:
    heard: list[tuple[str, str]] = []
    agains: list[anyio.Event] = [anyio.Event(), anyio.Event()]
    failures = 0
    failed_thrice = anyio.Event()
    got: dict[str, anyio.Event] = {"one": anyio.Event(), "two": anyio.Event()}

    async def again() -> None:
        next(e for e in agains if not e.is_set()).set()

    def failed() -> None:
        nonlocal failures
        failures += 1
        if failures == 3:
            failed_thrice.set()

    def hear(channel: str, payload: str) -> None:
        heard.append((channel, payload))
        got[payload].set()

    database = migrated_schema.database
    keeper_url = migrated_schema.server.url("postgres")  # not the database it closes
    async with (
        await psycopg.AsyncConnection.connect(migrated_url, autocommit=True) as admin,
        await psycopg.AsyncConnection.connect(keeper_url, autocommit=True) as keeper,
    ):
        with capture_logs() as logs:
            async with anyio.create_task_group() as group:
                group.start_soon(
                    lambda: listen_for_ever(
                        migrated_url,
                        [CHANNEL],
                        hear,
                        unheard="test_unheard",
                        again=again,
                        failed=failed,
                        retry_every=0.01,
                        where="here",
                    )
                )
                await agains[0].wait()
                await admin.execute(f"NOTIFY {CHANNEL}, 'one'")
                await got["one"].wait()
                # The outage: no new connection is let in, and the listener's is cut.
                await keeper.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
                await admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                await failed_thrice.wait()
                assert not agains[1].is_set()
                await keeper.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")
                await agains[1].wait()  # listening again: the caller reads back
                await admin.execute(f"NOTIFY {CHANNEL}, 'two'")
                await got["two"].wait()
                group.cancel_scope.cancel()
    assert heard == [(CHANNEL, "one"), (CHANNEL, "two")]
    outage = [e for e in logs if e["event"].startswith("test_unheard")]
    assert [(e["event"], e["log_level"], e["where"]) for e in outage] == [
        ("test_unheard", "warning", "here"),
        ("test_unheard_back", "info", "here"),
    ]
    assert failures >= 3
