"""What a dashboard page costs the daemon, over a filled SQLite database.

    python bench/dashboard.py [--sessions 50] [--decisions 5000] [--rounds 30]

Printed, per page: the median and the slowest of ``--rounds`` requests through the ASGI
app in the same process (store reads and rendering, no network), and the page's size.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Mount

from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.routes import dashboard_routes
from thalos_bot.domain.address import Address
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.messages import Message
from thalos_bot.domain.pricing import ModelPrice, ModelUsages, PriceTable
from thalos_bot.domain.security import SecurityContext
from thalos_bot.schedules.store import NewSchedule, ScheduleStore
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.audit import SqliteAudit
from thalos_bot.storage.database import Database
from thalos_bot.storage.protocol import SessionRecord, Spend
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.storage.usage import SqliteUsageLedger
from thalos_bot.tools.gate import AuditEntry, Decision

PAGES = ("/", "/sessions", "/schedules", "/audit", "/audit?decision=denied", "/tools")
NOW = datetime.now(UTC)


async def fill(db: Database, sessions: int, decisions: int) -> DashboardDeps:
    store, ledger, audit = SqliteSessionStore(db), SqliteUsageLedger(db), SqliteAudit(db)
    for n in range(sessions):
        sid = SessionId(f"s_{n}")
        at = NOW - timedelta(hours=n)
        await store.create(SessionRecord(sid, AgentId("assistant"), "alice", "open", at, at))
        usage = TokenUsage(1000 + n, 200)
        day = (NOW - timedelta(days=n % 30)).date().isoformat()
        spend = Spend("alice", day, usage, 0.01, sid, ModelUsages().add("claude-x", usage))
        await store.commit_turn(sid, [Message.user("hi")], usage, at, spend=spend)
    for n in range(decisions):
        decision: Decision = "denied" if n % 7 == 0 else "approved"
        await audit.record(
            AuditEntry(
                NOW - timedelta(minutes=n),
                SessionId(f"s_{n % max(1, sessions)}"),
                "telegram:1",
                "fs__write",
                "sha256:x",
                decision,
                "telegram:1",
            )
        )
    schedules = ScheduleStore(db)
    for n in range(20):
        await schedules.create(
            NewSchedule(
                SecurityContext.of("alice"),
                "assistant",
                f"Task {n}",
                Address.parse("telegram:1"),
                cron=f"{n} 9 * * *",
            ),
            NOW,
        )

    async def no_csrf(request: Request) -> bool:
        return False

    return DashboardDeps(
        principal_of=lambda request: "owner",
        is_owner=lambda principal: True,
        csrf_token=lambda request: "t",
        check_csrf=no_csrf,
        sessions=store,
        ledger=ledger,
        prices=PriceTable({"claude-x": ModelPrice(3, 15, 0.3, 3.75)}),
        schedules=schedules,
        audit=audit,
    )


async def main(sessions: int, decisions: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with await Database.open(Path(folder) / "b.db", migrations=ALL_MIGRATIONS) as db:
            deps = await fill(db, sessions, decisions)
            app = Starlette(routes=[Mount("/dashboard", routes=dashboard_routes(deps))])
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://b") as client:
                print(f"{sessions} sessions, {decisions} decisions, 20 schedules, {rounds} rounds")
                for path in PAGES:
                    took: list[float] = []
                    size = 0
                    for _ in range(rounds):
                        start = time.perf_counter()
                        response = await client.get("/dashboard" + path)
                        took.append((time.perf_counter() - start) * 1000)
                        size = len(response.content)
                    print(
                        f"  {path:<24} median {statistics.median(took):6.1f} ms"
                        f"  max {max(took):6.1f} ms  {size / 1024:6.1f} KiB"
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--decisions", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    anyio.run(main, args.sessions, args.decisions, args.rounds)
