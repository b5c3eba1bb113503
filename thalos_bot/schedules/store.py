"""Schedules in SQLite: created, listed, cancelled, claimed when due.

A run is claimed before it starts: in one transaction the row's ``next_run`` moves to
the occurrence after now (or the row is marked done), and ``last_started`` is set. A
crash mid-run therefore never runs it again (it may already have used a tool), and a
schedule that came due several times while the daemon was down runs once.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from thalos_bot.domain.address import Address
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.schedule import Origin, Schedule, State
from thalos_bot.domain.security import SecurityContext
from thalos_bot.domain.timing import next_run
from thalos_bot.storage.database import Database, decode_time, encode_time, fetch_all, fetch_one


class ScheduleError(Exception):
    """A schedule that cannot be created as asked; the text is user-safe."""


@dataclass(frozen=True, slots=True)
class NewSchedule:
    owner: SecurityContext
    agent_id: str
    task: str
    deliver_to: Address
    cron: str | None = None
    at: datetime | None = None
    timezone: str = "UTC"
    id: str | None = None
    origin: Origin = "tool"


def new_schedule_id() -> str:
    return "sch_" + secrets.token_urlsafe(6).replace("-", "x").replace("_", "y")


class ScheduleStorage(Protocol):
    """What the scheduler, the tools and the CLI need of a schedule store; SQLite's is
    :class:`ScheduleStore`, PostgreSQL's :class:`~thalos_bot.storage.pg.schedules.
    PgScheduleStore`."""

    async def create(self, new: NewSchedule, now: datetime) -> Schedule: ...

    async def sync_config(self, wanted: Sequence[NewSchedule], now: datetime) -> None: ...

    async def get(self, schedule_id: str) -> Schedule | None: ...

    async def active(
        self, *, owner: str | None = None, deliver_to: Address | None = None
    ) -> list[Schedule]: ...

    async def cancel(self, schedule_id: str, *, owner: str | None = None) -> bool: ...

    async def listing(self) -> list[Schedule]: ...

    async def pause(self, schedule_id: str) -> bool: ...

    async def resume(self, schedule_id: str, now: datetime) -> bool: ...

    async def next_due(self, channels: Collection[str] | None = None) -> datetime | None: ...

    async def claim_due(
        self, now: datetime, channels: Collection[str] | None = None
    ) -> list[Schedule]: ...

    async def finish(self, schedule_id: str, result: str, at: datetime) -> None: ...


_COLUMNS = (
    "id, origin, owner, roles, agent_id, task, cron, at, timezone, channel_id, "
    "conversation_id, state, next_run, last_started, runs, created_at, last_result, "
    "last_finished"
)
LISTING_ORDER = (
    " ORDER BY CASE state WHEN 'active' THEN 0 WHEN 'paused' THEN 1 ELSE 2 END,"
    " next_run, last_started DESC, id"
)
"""The dashboard's order: active soonest first, then paused, then finished."""


def resumed_run(schedule: Schedule, now: datetime) -> datetime:
    """When a paused schedule runs next once resumed: a cron's next occurrence after
    now; a one-shot's own time, or now when that has passed while it was paused."""
    if schedule.cron is not None:
        upcoming = next_run(cron=schedule.cron, timezone=schedule.timezone, at=None, after=now)
        if upcoming is not None:
            return upcoming
    if schedule.at is not None and schedule.at > now:
        return schedule.at
    return now


def _row(row: sqlite3.Row) -> Schedule:
    return Schedule(
        id=row["id"],
        origin=row["origin"],
        owner=row["owner"],
        roles=frozenset(json.loads(row["roles"])),
        agent_id=row["agent_id"],
        task=row["task"],
        cron=row["cron"],
        at=decode_time(row["at"]) if row["at"] else None,
        timezone=row["timezone"],
        deliver_to=Address(ChannelId(row["channel_id"]), ConversationId(row["conversation_id"])),
        state=row["state"],
        next_run=decode_time(row["next_run"]) if row["next_run"] else None,
        last_started=decode_time(row["last_started"]) if row["last_started"] else None,
        runs=row["runs"],
        created_at=decode_time(row["created_at"]),
        last_result=row["last_result"],
        last_finished=decode_time(row["last_finished"]) if row["last_finished"] else None,
    )


class ScheduleStore:
    def __init__(self, database: Database) -> None:
        self._db = database

    async def create(self, new: NewSchedule, now: datetime) -> Schedule:
        """Store ``new``; a :class:`ScheduleError` when it would never run."""
        first = next_run(cron=new.cron, timezone=new.timezone, at=new.at, after=now)
        if first is None:
            raise ScheduleError("That time has already passed.")
        schedule_id = new.id or new_schedule_id()
        async with self._db.transaction() as conn:
            await conn.execute(
                f"INSERT INTO schedules ({_COLUMNS}) "  # noqa: S608 - constant columns
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, NULL, 0, ?, NULL,"
                " NULL)",
                (
                    schedule_id,
                    new.origin,
                    new.owner.id,
                    json.dumps(sorted(new.owner.roles)),
                    new.agent_id,
                    new.task,
                    new.cron,
                    encode_time(new.at) if new.at is not None else None,
                    new.timezone,
                    new.deliver_to.channel_id,
                    new.deliver_to.conversation_id,
                    encode_time(first),
                    encode_time(now),
                ),
            )
        found = await self.get(schedule_id)
        assert found is not None  # just written
        return found

    async def sync_config(self, wanted: Sequence[NewSchedule], now: datetime) -> None:
        """Make the operator's ``[[schedules]]`` the active config rows: new ids are
        added, changed ones replaced, and ones no longer configured cancelled. An
        unchanged job keeps its next run, so a restart neither skips nor repeats it."""
        current = {s.id: s for s in await self._all() if s.origin == "config"}
        for new in wanted:
            assert new.id is not None
            old = current.pop(new.id, None)
            if old is not None and same_schedule(old, new):
                # Unchanged: an active job keeps its next run; a one-shot that already
                # ran, or one the operator cancelled, stays as it is.
                continue
            async with self._db.transaction() as conn:
                await conn.execute("DELETE FROM schedules WHERE id = ?", (new.id,))
            try:
                await self.create(new, now)
            except ScheduleError:
                continue  # a one-shot whose time is past: nothing to do
        for stale in current.values():
            if stale.state in {"active", "paused"}:
                await self.cancel(stale.id)

    async def get(self, schedule_id: str) -> Schedule | None:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                f"SELECT {_COLUMNS} FROM schedules WHERE id = ?",  # noqa: S608
                (schedule_id,),
            )
        return None if row is None else _row(row)

    async def _all(self) -> list[Schedule]:
        async with self._db.read() as conn:
            rows = await fetch_all(conn, f"SELECT {_COLUMNS} FROM schedules")  # noqa: S608
        return [_row(r) for r in rows]

    async def active(
        self, *, owner: str | None = None, deliver_to: Address | None = None
    ) -> list[Schedule]:
        """Active schedules, soonest first; only ``owner``'s, or only those delivering to
        ``deliver_to``, when given."""
        sql = f"SELECT {_COLUMNS} FROM schedules WHERE state = 'active'"  # noqa: S608
        params: list[str] = []
        if owner is not None:
            sql += " AND owner = ?"
            params.append(owner)
        if deliver_to is not None:
            sql += " AND channel_id = ? AND conversation_id = ?"
            params += [deliver_to.channel_id, deliver_to.conversation_id]
        async with self._db.read() as conn:
            rows = await fetch_all(conn, sql + " ORDER BY next_run, id", params)
        return [_row(r) for r in rows]

    async def listing(self) -> list[Schedule]:
        """Every schedule but the cancelled: active soonest first, paused, then done."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                f"SELECT {_COLUMNS} FROM schedules WHERE state <> 'cancelled'"  # noqa: S608
                + LISTING_ORDER,
            )
        return [_row(r) for r in rows]

    async def pause(self, schedule_id: str) -> bool:
        """Stop an active schedule from running until :meth:`resume`; False when there
        is no such active schedule."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE schedules SET state = 'paused' WHERE id = ? AND state = 'active'",
                (schedule_id,),
            )
            return cursor.rowcount == 1

    async def resume(self, schedule_id: str, now: datetime) -> bool:
        """Make a paused schedule active again, next running at :func:`resumed_run`;
        False when there is no such paused schedule."""
        async with self._db.transaction() as conn:
            row = await fetch_one(
                conn,
                f"SELECT {_COLUMNS} FROM schedules WHERE id = ? AND state = 'paused'",  # noqa: S608
                (schedule_id,),
            )
            if row is None:
                return False
            upcoming = resumed_run(_row(row), now)
            await conn.execute(
                "UPDATE schedules SET state = 'active', next_run = ? WHERE id = ?",
                (encode_time(upcoming), schedule_id),
            )
            return True

    async def finish(self, schedule_id: str, result: str, at: datetime) -> None:
        """Keep how a run ended (the dashboard's "last result")."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE schedules SET last_result = ?, last_finished = ? WHERE id = ?",
                (result, encode_time(at), schedule_id),
            )

    async def cancel(self, schedule_id: str, *, owner: str | None = None) -> bool:
        """Cancel an active or paused schedule (only ``owner``'s, when given); False when
        there is no such schedule for them."""
        sql = "UPDATE schedules SET state = 'cancelled', next_run = NULL WHERE id = ? "
        sql += "AND state IN ('active', 'paused')"
        params = [schedule_id]
        if owner is not None:
            sql += " AND owner = ?"
            params.append(owner)
        async with self._db.transaction() as conn:
            cursor = await conn.execute(sql, params)
            return cursor.rowcount == 1

    async def next_due(self, channels: Collection[str] | None = None) -> datetime | None:
        """The soonest next run (of schedules answering in ``channels``, when given)."""
        where, params = _in_channels(channels)
        sql = "SELECT min(next_run) FROM schedules WHERE state = 'active'" + where  # noqa: S608
        async with self._db.read() as conn:
            row = await fetch_one(conn, sql, params)
        return decode_time(row[0]) if row is not None and row[0] else None

    async def claim_due(
        self, now: datetime, channels: Collection[str] | None = None
    ) -> list[Schedule]:
        """Every schedule due at ``now`` (answering in ``channels``, when given), claimed:
        each row is moved past ``now`` (its next occurrence after now, or done) and
        marked started, in one transaction, before anything runs. What is returned runs
        once, at most."""
        claimed: list[Schedule] = []
        where, params = _in_channels(channels)
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn,
                f"SELECT {_COLUMNS} FROM schedules "  # noqa: S608
                f"WHERE state = 'active' AND next_run <= ?{where} ORDER BY next_run, id",
                (encode_time(now), *params),
            )
            for row in rows:
                schedule = _row(row)
                upcoming = next_run(
                    cron=schedule.cron, timezone=schedule.timezone, at=None, after=now
                )
                state: State = "active" if upcoming is not None else "done"
                await conn.execute(
                    "UPDATE schedules SET state = ?, next_run = ?, last_started = ?, "
                    "runs = runs + 1 WHERE id = ?",
                    (
                        state,
                        encode_time(upcoming) if upcoming is not None else None,
                        encode_time(now),
                        schedule.id,
                    ),
                )
                claimed.append(schedule)
        return claimed


def _in_channels(channels: Collection[str] | None) -> tuple[str, list[str]]:
    if channels is None:
        return "", []
    listed = sorted(channels)
    return f" AND channel_id IN ({', '.join('?' for _ in listed)})", listed


def same_schedule(old: Schedule, new: NewSchedule) -> bool:
    """Whether the stored ``old`` is what the configured ``new`` asks for."""
    return (
        old.owner == new.owner.id
        and old.roles == new.owner.roles
        and old.agent_id == new.agent_id
        and old.task == new.task
        and old.cron == new.cron
        and old.at == (new.at.astimezone(old.at.tzinfo) if new.at and old.at else new.at)
        and old.timezone == new.timezone
        and old.deliver_to == new.deliver_to
    )
