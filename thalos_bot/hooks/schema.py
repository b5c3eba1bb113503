"""The hook deliveries table (migration ``0530_*``), on SQLite and on PostgreSQL.

One row per delivery that was let in: its dedupe key (the sender's delivery id, or the
body's hash) is unique per hook, so a repeated delivery finds its row and starts
nothing, across restarts and replicas. The row carries everything its run needs (the
screened task, who it runs as, where its result goes), so a run survives the daemon:
``pending`` (stored, not started), ``running`` (claimed by ``claimed_by`` until
``claimed_until``), ``finished`` (the result is kept, its delivery not yet confirmed)
and ``done``.
"""

from __future__ import annotations

from thalos_bot.storage.migrations import Migration

_STATES = "('pending', 'running', 'finished', 'done')"
_TABLE = """
CREATE TABLE hook_deliveries (
    id              TEXT PRIMARY KEY NOT NULL,
    hook            TEXT NOT NULL,
    dedupe_key      TEXT NOT NULL,
    received_at     {time} NOT NULL,
    agent_id        TEXT NOT NULL,
    principal       TEXT NOT NULL CHECK (principal <> ''),
    roles           TEXT NOT NULL DEFAULT '[]',
    channel_id      TEXT,
    conversation_id TEXT,
    task            TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN {states}),
    attempts        {int} NOT NULL DEFAULT 0,
    claimed_by      TEXT,
    claimed_until   {time},
    result          TEXT,
    result_kind     TEXT CHECK (result_kind IN ('answer', 'notice')),
    finished_at     {time},
    UNIQUE (hook, dedupe_key)
){rowid};
CREATE INDEX hook_deliveries_open ON hook_deliveries (state, claimed_until){where};
"""

HOOK_MIGRATIONS: list[Migration] = [
    Migration(
        "0530_hook_deliveries",
        _TABLE.format(time="TEXT", int="INTEGER", states=_STATES, rowid=" WITHOUT ROWID", where=""),
    ),
]

PG_HOOK_MIGRATIONS: list[Migration] = [
    Migration(
        "0530_hook_deliveries",
        _TABLE.format(
            time="TIMESTAMPTZ",
            int="BIGINT",
            states=_STATES,
            rowid="",
            where="\n    WHERE state <> 'done'",
        ),
    ),
]
