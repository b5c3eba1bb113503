"""``doctor`` on a PostgreSQL store: is the server reachable with the configured url and
password, and is its schema one this version reads.

It opens one plain connection and only reads: a check never applies a migration (the
daemon does, under its advisory lock) and never holds the migration lock.
"""

from __future__ import annotations

from typing import Any

import psycopg

from thalos_bot.channels.checks import Check
from thalos_bot.config.loader import LoadedConfig
from thalos_bot.service.doctor_schema import schema_check
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import (
    PASSWORD_ENV,
    connection_kwargs,
    first_line,
    redacted,
)

CONNECT_TIMEOUT_S = 5


def _url(loaded: LoadedConfig) -> str:
    url = loaded.settings.storage.target.url
    assert url is not None  # a postgresql target always has one
    return url


def _connect(loaded: LoadedConfig) -> psycopg.Connection[Any]:
    kwargs = connection_kwargs()
    return psycopg.connect(
        _url(loaded), connect_timeout=CONNECT_TIMEOUT_S, autocommit=True, **kwargs
    )


def shared_database(loaded: LoadedConfig, name: str) -> Check:
    """The PostgreSQL store's line of the database check."""
    where = redacted(_url(loaded))
    try:
        with _connect(loaded) as conn:
            found = "SELECT to_regclass('schema_migrations') IS NOT NULL AS t"
            row = conn.execute(found).fetchone()
            recorded = bool(row and row["t"])
            applied = (
                [
                    str(r["name"])
                    for r in conn.execute("SELECT name FROM schema_migrations ORDER BY position")
                ]
                if recorded
                else []
            )
    except psycopg.Error as exc:
        return Check(
            name,
            "fail",
            f"{where}: cannot connect ({first_line(exc)})",
            f"start the server or correct storage.url; the password comes from "
            f"${PASSWORD_ENV} (or libpq's PGPASSWORD / ~/.pgpass), never from the file",
        )
    return schema_check(
        name,
        where,
        applied,
        [m.name for m in PG_ALL_MIGRATIONS],
        "upgrade thalos-bot to the version the other replicas run",
    )


def shared_schedule_targets(loaded: LoadedConfig) -> list[tuple[str, str]]:
    """(id, channel) of the active schedules made at run time; empty when the server or
    its table cannot be read (the database check says why)."""
    try:
        with _connect(loaded) as conn:
            row = conn.execute("SELECT to_regclass('schedules') IS NOT NULL AS t").fetchone()
            if not (row and row["t"]):
                return []
            return [
                (str(r["id"]), str(r["channel_id"]))
                for r in conn.execute(
                    "SELECT id, channel_id FROM schedules WHERE state = 'active'"
                    " AND origin != 'config' ORDER BY id"
                )
            ]
    except psycopg.Error:
        return []
