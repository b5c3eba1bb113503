"""The session store on SQLite and on PostgreSQL: one turn's commit, one context load.

    python bench/pg_store.py [--turns 300] [--sessions 20] [--concurrency 1 8]

Starts a throwaway PostgreSQL 15 (as ``tests/storage/postgres.py`` does: durability off,
so these are the store's own costs, not the disk's) and a SQLite file in a temporary
folder. For each store and each concurrency, ``--turns`` turns (a user message and an
answer, with an outbox row and the day's spend, like the runtime's) are committed
across ``--sessions`` sessions, then each session's context is loaded. Printed: how long
the server took to start, and p50 / p99 per commit and per load, in milliseconds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import anyio

from tests.storage.postgres import start_server
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId, SessionId
from thalos_bot.domain.messages import Message, TextBlock
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.storage.protocol import (
    OutboxAddress,
    OutboxEntry,
    SessionRecord,
    SessionStore,
    Spend,
)
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _ms(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return 1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def _run(store: SessionStore, label: str, args: argparse.Namespace, width: int) -> None:
    prefix = f"{label}-{width}"
    sessions = [SessionId(f"{prefix}-{n}") for n in range(args.sessions)]
    for sid in sessions:
        await store.create(SessionRecord(sid, AgentId("helper"), "alice", "open", T0, T0))
    commits: list[float] = []
    loads: list[float] = []
    counter = iter(range(args.turns))

    async def worker() -> None:
        for turn in counter:
            sid = sessions[turn % len(sessions)]
            messages = [
                Message.user(f"question {turn}"),
                Message("assistant", (TextBlock("an answer of some length " * 8),)),
            ]
            entry = OutboxEntry(
                OutboxAddress(ChannelId("telegram"), ConversationId("42"), f"{prefix}-{turn}"),
                "an answer",
            )
            spend = Spend("alice", "2026-12-01", TokenUsage(100, 50), 0.01)
            began = time.perf_counter()
            await store.commit_turn(
                sid, messages, TokenUsage(100, 50), T0, outbox=entry, spend=spend
            )
            commits.append(time.perf_counter() - began)

    async with anyio.create_task_group() as group:
        for _ in range(width):
            group.start_soon(worker)
    for sid in sessions:
        began = time.perf_counter()
        await store.load_context(sid, max_chars=200_000)
        loads.append(time.perf_counter() - began)
    print(
        f"{label:10} concurrency {width:3}: commit p50 {_ms(commits, 0.5):6.2f} ms"
        f"  p99 {_ms(commits, 0.99):6.2f} ms   load p50 {_ms(loads, 0.5):6.2f} ms"
        f"  p99 {_ms(loads, 0.99):6.2f} ms"
    )


async def _each(
    open_store: Callable[[], Awaitable[tuple[SessionStore, Callable[[], Awaitable[None]]]]],
    label: str,
    args: argparse.Namespace,
) -> None:
    store, close = await open_store()
    try:
        for width in args.concurrency:
            await _run(store, label, args, width)
    finally:
        await close()


async def main(args: argparse.Namespace) -> None:
    server = start_server()
    print(f"postgres: initdb and start took {server.start_seconds:.2f} s")
    try:
        url = server.create_database("bench")
        with tempfile.TemporaryDirectory() as folder:

            async def sqlite() -> tuple[SessionStore, Callable[[], Awaitable[None]]]:
                db = await Database.open(Path(folder) / "bench.db", migrations=ALL_MIGRATIONS)
                return SqliteSessionStore(db), db.aclose

            async def postgres() -> tuple[SessionStore, Callable[[], Awaitable[None]]]:
                db = await PgDatabase.open(url, pool_size=max(args.concurrency))
                return PgSessionStore(db), db.aclose

            await _each(sqlite, "sqlite", args)
            await _each(postgres, "postgresql", args)
    finally:
        server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    options = parser.parse_args()
    if options.turns < 1 or options.sessions < 1 or min(options.concurrency) < 1:
        parser.error("--turns, --sessions and --concurrency must be at least 1")
    anyio.run(main, options)
