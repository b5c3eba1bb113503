"""Schedules on PostgreSQL: the interface of :class:`~thalos_bot.schedules.store.
ScheduleStore`, claimed the same way (moved past now and marked started before
anything runs), with ``FOR UPDATE SKIP LOCKED``: replicas claiming at once each take
different rows, and every due run is claimed once."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from psycopg.rows import DictRow

from thalos_bot.domain.address import Address
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.schedule import Schedule, State
from thalos_bot.domain.timing import next_run
from thalos_bot.schedules.store import (
    LISTING_ORDER,
    NewSchedule,
    ScheduleError,
    new_schedule_id,
    resumed_run,
    same_schedule,
)
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one

_COLUMNS = (
    "id, origin, owner, roles, agent_id, task, cron, at, timezone, channel_id, "
    "conversation_id, state, next_run, last_started, runs, created_at, last_result, "
    "last_finished"
)
_SELECT = f"SELECT {_COLUMNS} FROM schedules"  # noqa: S608 - constant columns
_SOONEST = "SELECT min(next_run) AS soonest FROM schedules WHERE state = 'active'"


_MINE = (
    " AND (NOT EXISTS (SELECT 1 FROM connection_seen s WHERE s.channel_id = schedules.channel_id"
    " AND s.conversation_id = schedules.conversation_id AND s.owner_only)"
    " OR EXISTS (SELECT 1 FROM connection_leases c WHERE c.channel_id = schedules.channel_id"
    " AND c.holder = %s AND c.expires_at > now()))"
)
"""A schedule answering in an owner-only conversation (a Matrix room encrypted with the
keys the connection's holder has) is claimed only by that holder, the one replica that
can send there."""


class PgScheduleStore:
    def __init__(self, database: PgDatabase, replica: str | None = None) -> None:
        """``replica``: this process's name among replicas (their connection leases'
        holder), to leave owner-only conversations' schedules to their holder."""
        self._db = database
        self._replica = replica

    async def create(self, new: NewSchedule, now: datetime) -> Schedule:
        """Store ``new``; a :class:`ScheduleError` when it would never run."""
        first = next_run(cron=new.cron, timezone=new.timezone, at=new.at, after=now)
        if first is None:
            raise ScheduleError("That time has already passed.")
        schedule_id = new.id or new_schedule_id()
        async with self._db.transaction() as conn:
            row = await fetch_one(
                conn,
                f"INSERT INTO schedules ({_COLUMNS}) "  # noqa: S608 - constant columns
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'active', %s, NULL, 0, %s,"
                " NULL, NULL)"
                f" RETURNING {_COLUMNS}",
                (
                    schedule_id,
                    new.origin,
                    new.owner.id,
                    json.dumps(sorted(new.owner.roles)),
                    new.agent_id,
                    new.task,
                    new.cron,
                    as_utc(new.at) if new.at is not None else None,
                    new.timezone,
                    new.deliver_to.channel_id,
                    new.deliver_to.conversation_id,
                    as_utc(first),
                    as_utc(now),
                ),
            )
        assert row is not None  # RETURNING gives the row written
        return _row(row)

    async def sync_config(self, wanted: Sequence[NewSchedule], now: datetime) -> None:
        """Make the operator's ``[[schedules]]`` the active config rows (see
        :meth:`ScheduleStore.sync_config`)."""
        current = {s.id: s for s in await self._all() if s.origin == "config"}
        for new in wanted:
            assert new.id is not None
            old = current.pop(new.id, None)
            if old is not None and same_schedule(old, new):
                continue
            async with self._db.transaction() as conn:
                await conn.execute("DELETE FROM schedules WHERE id = %s", (new.id,))
            try:
                await self.create(new, now)
            except ScheduleError:
                continue  # a one-shot whose time is past: nothing to do
        for stale in current.values():
            if stale.state in {"active", "paused"}:
                await self.cancel(stale.id)

    async def get(self, schedule_id: str) -> Schedule | None:
        async with self._db.read() as conn:
            row = await fetch_one(conn, _SELECT + " WHERE id = %s", (schedule_id,))
        return None if row is None else _row(row)

    async def _all(self) -> list[Schedule]:
        async with self._db.read() as conn:
            rows = await fetch_all(conn, _SELECT)
        return [_row(r) for r in rows]

    async def active(
        self, *, owner: str | None = None, deliver_to: Address | None = None
    ) -> list[Schedule]:
        """Active schedules, soonest first; only ``owner``'s, or only those delivering to
        ``deliver_to``, when given."""
        sql = _SELECT + " WHERE state = 'active'"
        params: list[str] = []
        if owner is not None:
            sql += " AND owner = %s"
            params.append(owner)
        if deliver_to is not None:
            sql += " AND channel_id = %s AND conversation_id = %s"
            params += [deliver_to.channel_id, deliver_to.conversation_id]
        async with self._db.read() as conn:
            rows = await fetch_all(conn, sql + " ORDER BY next_run, id", params)
        return [_row(r) for r in rows]

    async def listing(self) -> list[Schedule]:
        """Every schedule but the cancelled: active soonest first, paused, then done."""
        async with self._db.read() as conn:
            rows = await fetch_all(conn, _SELECT + " WHERE state <> 'cancelled'" + LISTING_ORDER)
        return [_row(r) for r in rows]

    async def pause(self, schedule_id: str) -> bool:
        """Stop an active schedule until :meth:`resume`; False when there is none."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE schedules SET state = 'paused' WHERE id = %s AND state = 'active'",
                (schedule_id,),
            )
            return cursor.rowcount == 1

    async def resume(self, schedule_id: str, now: datetime) -> bool:
        """Make a paused schedule active again (see :func:`resumed_run`)."""
        async with self._db.transaction() as conn:
            row = await fetch_one(
                conn, _SELECT + " WHERE id = %s AND state = 'paused' FOR UPDATE", (schedule_id,)
            )
            if row is None:
                return False
            await conn.execute(
                "UPDATE schedules SET state = 'active', next_run = %s WHERE id = %s",
                (as_utc(resumed_run(_row(row), now)), schedule_id),
            )
            return True

    async def finish(self, schedule_id: str, result: str, at: datetime) -> None:
        """Keep how a run ended (the dashboard's "last result")."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE schedules SET last_result = %s, last_finished = %s WHERE id = %s",
                (result, as_utc(at), schedule_id),
            )

    async def cancel(self, schedule_id: str, *, owner: str | None = None) -> bool:
        """Cancel an active or paused schedule (only ``owner``'s, when given); False when
        there is no such schedule for them."""
        sql = "UPDATE schedules SET state = 'cancelled', next_run = NULL"
        sql += " WHERE id = %s AND state IN ('active', 'paused')"
        params = [schedule_id]
        if owner is not None:
            sql += " AND owner = %s"
            params.append(owner)
        async with self._db.transaction() as conn:
            cursor = await conn.execute(sql, params)
            return cursor.rowcount == 1

    async def next_due(self, channels: Collection[str] | None = None) -> datetime | None:
        """The soonest next run (of schedules answering in ``channels``, when given)."""
        where, params = _in_channels(channels)
        sql = _SOONEST + where
        async with self._db.read() as conn:
            row = await fetch_one(conn, sql, params)
        soonest = None if row is None else row["soonest"]
        return None if soonest is None else as_utc(soonest)

    async def claim_due(
        self, now: datetime, channels: Collection[str] | None = None
    ) -> list[Schedule]:
        """Every schedule due at ``now`` (answering in ``channels``, when given) that no
        other replica is claiming, claimed in one transaction before anything runs."""
        claimed: list[Schedule] = []
        where, params = _in_channels(channels)
        if self._replica is not None:
            where, params = where + _MINE, [*params, self._replica]
        async with self._db.transaction() as conn:
            rows = await fetch_all(
                conn,
                _SELECT
                + " WHERE state = 'active' AND next_run <= %s"
                + where
                # Rows another replica is claiming are skipped: once it commits they are
                # no longer due, so waiting for them would only claim nothing, later.
                + " ORDER BY next_run, id FOR UPDATE SKIP LOCKED",
                (as_utc(now), *params),
            )
            for row in rows:
                schedule = _row(row)
                upcoming = next_run(
                    cron=schedule.cron, timezone=schedule.timezone, at=None, after=now
                )
                state: State = "active" if upcoming is not None else "done"
                await conn.execute(
                    "UPDATE schedules SET state = %s, next_run = %s, last_started = %s,"
                    " runs = runs + 1 WHERE id = %s",
                    (state, upcoming, as_utc(now), schedule.id),
                )
                claimed.append(schedule)
        return claimed


def _in_channels(channels: Collection[str] | None) -> tuple[str, list[Any]]:
    if channels is None:
        return "", []
    return " AND channel_id = ANY(%s)", [sorted(channels)]


def _row(row: DictRow) -> Schedule:
    return Schedule(
        id=row["id"],
        origin=row["origin"],
        owner=row["owner"],
        roles=frozenset(json.loads(row["roles"])),
        agent_id=row["agent_id"],
        task=row["task"],
        cron=row["cron"],
        at=as_utc(row["at"]) if row["at"] is not None else None,
        timezone=row["timezone"],
        deliver_to=Address(ChannelId(row["channel_id"]), ConversationId(row["conversation_id"])),
        state=row["state"],
        next_run=as_utc(row["next_run"]) if row["next_run"] is not None else None,
        last_started=as_utc(row["last_started"]) if row["last_started"] is not None else None,
        runs=int(row["runs"]),
        created_at=as_utc(row["created_at"]),
        last_result=row["last_result"],
        last_finished=as_utc(row["last_finished"]) if row["last_finished"] is not None else None,
    )
