"""``thalos-bot status [--json]``: is the daemon running, since when, how its channels
are, what waits in the outbox, the next schedules, and today's spending.

It reads the daemon's status file and the state database (read-only, so it never
competes with the daemon's writes); it works whether the daemon runs or not.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import zoneinfo
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from thalos_bot.config.loader import LoadedConfig, load_settings
from thalos_bot.domain.clock import ago
from thalos_bot.domain.schedule import Schedule
from thalos_bot.schedules.store import _COLUMNS, _row
from thalos_bot.schedules.words import describe
from thalos_bot.service.status import DaemonState, read_status
from thalos_bot.storage.usage import DayUsage

NEXT_SCHEDULES = 5


@dataclass(frozen=True, slots=True)
class Stored:
    """What the database holds for ``status``; ``problem`` when it cannot be read."""

    outbox_pending: int | None = None
    schedules: tuple[dict[str, Any], ...] = ()
    today_tokens: int | None = None
    today_cost_usd: float | None = None
    tasks: tuple[dict[str, Any], ...] = ()
    """Long work in progress (``task_progress``, e.g. a memory reindex), when recorded."""
    problem: str | None = None
    connections: tuple[dict[str, Any], ...] = ()
    """Replicas: which replica holds each platform connection, since when, and the
    last takeover (PostgreSQL only)."""
    people: tuple[tuple[str, int, float], ...] = ()
    """Each person's spending today: (principal, tokens, estimated dollars)."""


def run(args: argparse.Namespace) -> int:
    loaded = load_settings(args.config)
    now = datetime.now(UTC)
    daemon = read_status(loaded.state_dir, now)
    stored = _stored(loaded, now)
    report = _report(loaded, daemon, stored, now)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(_lines(report, now)))
    return 0


def _today(loaded: LoadedConfig, now: datetime) -> str:
    zone = zoneinfo.ZoneInfo(loaded.settings.limits.timezone)
    return now.astimezone(zone).date().isoformat()


def _stored(loaded: LoadedConfig, now: datetime) -> Stored:
    if loaded.settings.storage.target.kind == "postgresql":
        return _stored_shared(loaded, now)
    path = loaded.database_path
    if not path.exists():
        return Stored(problem=f"no database yet ({path} is made at the first start)")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            conn.row_factory = sqlite3.Row
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            pending = (
                conn.execute("SELECT COUNT(*) FROM outbox WHERE state = 'pending'").fetchone()[0]
                if "outbox" in tables
                else 0
            )
            schedules: list[dict[str, Any]] = []
            if "schedules" in tables:
                rows = conn.execute(
                    f"SELECT {_COLUMNS} FROM schedules WHERE state = 'active' "  # noqa: S608
                    "AND next_run IS NOT NULL ORDER BY next_run, id LIMIT ?",
                    (NEXT_SCHEDULES,),
                ).fetchall()
                schedules = [_schedule(_row(row), now) for row in rows]
            people: list[tuple[str, int, float]] = []
            if "usage_daily" in tables:
                people = [
                    (str(row[0]), int(row[1]), float(row[2]))
                    for row in conn.execute(
                        "SELECT principal, input_tokens + output_tokens + cache_read_tokens"
                        " + cache_write_tokens, cost_usd FROM usage_daily WHERE day = ?"
                        " ORDER BY principal",
                        (_today(loaded, now),),
                    )
                ]
            tasks = _tasks(conn) if "task_progress" in tables else []
    except sqlite3.Error as exc:
        return Stored(problem=f"the database {path} cannot be read ({exc})")
    tokens, cost = sum(p[1] for p in people), sum(p[2] for p in people)
    return Stored(int(pending), tuple(schedules), tokens, cost, tuple(tasks), people=tuple(people))


def _schedule(schedule: Schedule, now: datetime) -> dict[str, Any]:
    return {
        "id": schedule.id,
        "next_run": schedule.next_run.isoformat() if schedule.next_run else None,
        "to": str(schedule.deliver_to.channel_id),
        "line": describe(schedule, now),
    }


def _stored_shared(loaded: LoadedConfig, now: datetime) -> Stored:
    """The same figures from a PostgreSQL store, read through the daemon's own stores;
    the long work in progress stays in this machine's own file (``local.sqlite3``)."""
    import anyio
    import psycopg

    from thalos_bot.cli import state
    from thalos_bot.storage.database import DatabaseError

    try:
        stored: Stored = anyio.run(_read_shared, loaded, now)
    except (DatabaseError, psycopg.Error, OSError) as exc:
        return Stored(problem=f"{state.where(loaded)} cannot be read ({exc})")
    local = loaded.local_path
    if not local.exists():
        return stored
    try:
        with sqlite3.connect(f"file:{local}?mode=ro", uri=True) as conn:
            conn.row_factory = sqlite3.Row
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            tasks = _tasks(conn) if "task_progress" in tables else []
    except sqlite3.Error as exc:
        return replace(stored, problem=f"the database {local} cannot be read ({exc})")
    return replace(stored, tasks=tuple(tasks))


async def _read_shared(loaded: LoadedConfig, now: datetime) -> Stored:
    from thalos_bot.cli import state
    from thalos_bot.cluster.connections import owners
    from thalos_bot.storage.pg.database import PgDatabase, fetch_one
    from thalos_bot.storage.pg.usage import PgUsageLedger

    async with state.opened(loaded) as stores:
        assert stores is not None  # a server is always asked
        assert isinstance(stores.shared, PgDatabase)
        async with stores.shared.read() as conn:
            row = await fetch_one(conn, "SELECT count(*) AS n FROM outbox WHERE state = 'pending'")
        pending = 0 if row is None else int(row["n"])
        due = sorted(
            (s for s in await stores.schedules.listing() if s.state == "active" and s.next_run),
            key=lambda s: (s.next_run or now, s.id),
        )
        today = _today(loaded, now)
        spent = (await stores.spend.days(today, today)).get(today, DayUsage())
        ledger = stores.usage
        assert isinstance(ledger, PgUsageLedger)
        people = await ledger.people(today, today)
        held = await owners(stores.shared)
    return Stored(
        pending,
        tuple(_schedule(s, now) for s in due[:NEXT_SCHEDULES]),
        spent.usage.total,
        spent.cost_usd,
        connections=tuple(
            {
                "channel": owner.channel_id,
                "holder": None if owner.expired else owner.holder,
                "since": None if owner.since is None else owner.since.isoformat(),
                "taken_over_at": None
                if owner.taken_over_at is None
                else owner.taken_over_at.isoformat(),
            }
            for owner in held
        ),
        people=tuple((who, used.usage.total, used.cost_usd) for who, used in people.items()),
    )


def _tasks(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Unfinished long work: the rows of ``task_progress`` not ``done``."""
    rows = conn.execute(
        "SELECT task, state, done, total, detail, updated_at FROM task_progress "
        "WHERE state != 'done' ORDER BY task"
    ).fetchall()
    return [
        {
            "task": row["task"],
            "state": row["state"],
            "done": row["done"],
            "total": row["total"],
            "detail": row["detail"],
            "updated_at": row["updated_at"],
        }
        for row in rows
    ]


def _report(
    loaded: LoadedConfig, daemon: DaemonState | None, stored: Stored, now: datetime
) -> dict[str, Any]:
    def stamp(at: datetime | None) -> str | None:
        return None if at is None else at.isoformat()

    return {
        "config": loaded.label,
        "state_dir": str(loaded.state_dir),
        "running": daemon is not None and daemon.running,
        "state": "never started" if daemon is None else daemon.state,
        "detail": "" if daemon is None else daemon.detail,
        "hung": daemon is not None and daemon.stale,
        "pid": None if daemon is None else daemon.pid,
        "since": None if daemon is None else stamp(daemon.started_at),
        "heartbeat_at": None if daemon is None else stamp(daemon.heartbeat_at),
        "systemd_unit": None if daemon is None else daemon.systemd_unit,
        "channels": [] if daemon is None else daemon.channels,
        "outbox_pending": stored.outbox_pending,
        "next_schedules": list(stored.schedules),
        "today": {
            "day": _today(loaded, now),
            "timezone": loaded.settings.limits.timezone,
            "tokens": stored.today_tokens,
            "cost_usd": stored.today_cost_usd,
            "people": _people(loaded, stored),
        },
        "tasks": list(stored.tasks),
        "connections": list(stored.connections),
        "database_problem": stored.problem,
    }


def _people(loaded: LoadedConfig, stored: Stored) -> list[dict[str, Any]]:
    """Each person who spent today, against their daily limits."""
    from thalos_bot.service.spending import spending_limits
    from thalos_bot.storage.usage import MemoryUsageLedger

    limits = spending_limits(loaded.settings, MemoryUsageLedger())
    rows = []
    for principal, tokens, cost in stored.people:
        token_limit, cost_limit = limits.daily(principal)
        rows.append(
            {
                "person": principal,
                "tokens": tokens,
                "cost_usd": round(cost, 6),
                "daily_tokens": token_limit,
                "daily_cost_usd": cost_limit,
            }
        )
    return rows


def _when(value: object, now: datetime) -> str:
    if not isinstance(value, str):
        return "never"
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return "unknown"
    return f"{at.astimezone(UTC):%Y-%m-%d %H:%M} UTC ({ago(now - at)})"


def _lines(report: dict[str, Any], now: datetime) -> list[str]:
    lines = [f"config: {report['config']}; state folder: {report['state_dir']}"]
    state = report["state"]
    if report["running"]:
        head = f"daemon: running since {_when(report['since'], now)}, pid {report['pid']}"
        head += f", {state}" + (f" ({report['detail']})" if report["detail"] else "")
        if report["hung"]:
            head += f"; no heartbeat since {_when(report['heartbeat_at'], now)}: it hangs"
        lines.append(head)
    elif state == "never started":
        lines.append("daemon: not running (it has never run with this state folder)")
    elif state == "gone":
        lines.append(
            f"daemon: not running; it ended without stopping cleanly (last heartbeat "
            f"{_when(report['heartbeat_at'], now)})"
        )
    else:
        lines.append(
            f"daemon: not running (stopped; last heartbeat {_when(report['heartbeat_at'], now)})"
        )
    if report["channels"]:
        lines.append("channels:")
        for channel in report["channels"]:
            lines.append(f"  {channel.get('describe') or channel.get('name')}")
            lines.append(f"    last poll or event: {_when(channel.get('last_ok_at'), now)}")
            if channel.get("last_error"):
                lines.append(
                    f"    last error: {channel['last_error']}, "
                    f"{_when(channel.get('last_error_at'), now)}"
                )
    if report["database_problem"]:
        lines.append(f"database: {report['database_problem']}")
        return lines
    lines.append(f"outbox: {report['outbox_pending']} pending")
    for held in report["connections"]:
        if held["holder"] is None:
            line = "nobody now (a standby replica takes it within a second)"
        else:
            line = f"replica {held['holder']} since {_when(held['since'], now)}"
        if held["taken_over_at"]:
            line += f"; last taken over {_when(held['taken_over_at'], now)}"
        lines.append(f"connection {held['channel']}: {line}")
    if report["next_schedules"]:
        lines.append("next schedules:")
        lines.extend(f"  {item['line']}" for item in report["next_schedules"])
    else:
        lines.append("next schedules: none")
    for task in report["tasks"]:
        detail = f", {task['detail']}" if task["detail"] else ""
        lines.append(
            f"task {task['task']}: {task['state']}, {task['done']:,} of {task['total']:,}"
            f"{detail} (last moved {_when(task['updated_at'], now)})"
        )
    today = report["today"]
    cost = today["cost_usd"] or 0.0
    lines.append(
        f"today ({today['day']}, {today['timezone']}): {today['tokens']:,} tokens, "
        f"{'$0.00' if cost == 0 else f'about ${cost:,.2f}' if cost >= 0.01 else 'under $0.01'}"
    )
    for person in today["people"]:
        tokens = f"{person['tokens']:,}"
        if person["daily_tokens"] is not None:
            tokens += f" of {person['daily_tokens']:,}"
        dollars = f"${person['cost_usd']:,.2f}"
        if person["daily_cost_usd"] is not None:
            dollars += f" of ${person['daily_cost_usd']:,.2f}"
        lines.append(f"  {person['person']}: {tokens} tokens, {dollars}")
    return lines
