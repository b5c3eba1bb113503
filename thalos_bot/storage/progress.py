"""Long work's progress in the state database, for whoever wants to know how it goes
(``thalos-bot status``, a resumed command): one row per task in ``task_progress``.

A row says which process (``pid``) last worked on the task, its ``state`` (``running``,
``done``, ``interrupted`` or ``failed``), ``done`` of ``total`` items, a short
``detail`` (the kind of run, e.g. ``full`` or ``pending`` for a memory reindex), when it
began and when it last moved. A ``running`` row whose ``pid`` is no longer alive was
left by a process that was killed outright.

Tasks so far: :data:`MEMORY_REINDEX` (``thalos-bot memory reindex`` and the daemon's
background embedding of pending memories).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from thalos_bot.storage.database import Database, decode_time, encode_time, fetch_all
from thalos_bot.storage.migrations import Migration

State = Literal["running", "done", "interrupted", "failed"]
MEMORY_REINDEX = "memory-reindex"

PROGRESS_MIGRATIONS: list[Migration] = [
    Migration(
        "0320_task_progress",
        """
        CREATE TABLE task_progress (
            task       TEXT PRIMARY KEY NOT NULL,
            state      TEXT NOT NULL
                       CHECK (state IN ('running', 'done', 'interrupted', 'failed')),
            done       INTEGER NOT NULL CHECK (done >= 0),
            total      INTEGER NOT NULL CHECK (total >= 0),
            detail     TEXT NOT NULL DEFAULT '',
            pid        INTEGER NOT NULL,
            started_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        ) WITHOUT ROWID;
        """,
    ),
]
"""Part of the memory migrations (its first user), so every database that has memory
has it."""


@dataclass(frozen=True, slots=True)
class TaskProgress:
    task: str
    state: State
    done: int
    total: int
    detail: str
    pid: int
    started_at: datetime
    updated_at: datetime

    @property
    def left(self) -> int:
        return max(self.total - self.done, 0)


class ProgressBoard:
    """Writes one task's row: :meth:`begin`, :meth:`advance` as it goes, :meth:`end`."""

    def __init__(
        self,
        db: Database,
        task: str,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._db = db
        self.task = task
        self._clock = clock

    async def begin(self, total: int, detail: str = "") -> None:
        now = encode_time(self._clock())
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO task_progress"
                " (task, state, done, total, detail, pid, started_at, updated_at)"
                " VALUES (?, 'running', 0, ?, ?, ?, ?, ?)"
                " ON CONFLICT (task) DO UPDATE SET state = 'running', done = 0,"
                " total = excluded.total, detail = excluded.detail, pid = excluded.pid,"
                " started_at = excluded.started_at, updated_at = excluded.updated_at",
                (self.task, max(total, 0), detail, os.getpid(), now, now),
            )

    async def advance(self, done: int, total: int) -> None:
        await self._set("running", done, total)

    async def end(self, state: State, done: int, total: int) -> None:
        await self._set(state, done, total)

    async def _set(self, state: State, done: int, total: int) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE task_progress SET state = ?, done = ?, total = ?, updated_at = ?"
                " WHERE task = ?",
                (state, max(done, 0), max(total, done, 0), encode_time(self._clock()), self.task),
            )


async def read_progress(db: Database, task: str | None = None) -> list[TaskProgress]:
    """Every task's row (or ``task``'s), by task name."""
    sql = "SELECT task, state, done, total, detail, pid, started_at, updated_at FROM task_progress"
    async with db.read() as conn:
        if task is None:
            rows = await fetch_all(conn, sql + " ORDER BY task")
        else:
            rows = await fetch_all(conn, sql + " WHERE task = ?", (task,))
    return [
        TaskProgress(
            task=str(r["task"]),
            state=r["state"],
            done=int(r["done"]),
            total=int(r["total"]),
            detail=str(r["detail"]),
            pid=int(r["pid"]),
            started_at=decode_time(str(r["started_at"])),
            updated_at=decode_time(str(r["updated_at"])),
        )
        for r in rows
    ]
