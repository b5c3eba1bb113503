"""Hook deliveries in the database: let in once, claimed before they run, kept until
their result is delivered (the table is described in :mod:`thalos_bot.hooks.schema`).

:meth:`HookStore.receive` is the dedupe: a row with the same hook and key answers "seen
already". A key made from the body's hash (the sender gave no delivery id) only counts
within the window: an older row gives its key up and the delivery is let in again.

:meth:`HookStore.claim` takes the rows nobody holds: pending ones, and running or
finished ones whose claim ran out (their daemon died; ``everyone`` takes them all, for
a daemon that is the only one on its database). A run is tried :data:`MAX_ATTEMPTS`
times at most; a row claimed once more than that comes back ``gave_up``, to be reported.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal, Protocol

from thalos_bot.domain.address import Address
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.storage.database import Database, decode_time, encode_time, fetch_all, fetch_one

MAX_ATTEMPTS = 2
"""Runs of one delivery at most: the first, and one more after a daemon died in it."""
BODY_KEY = "body:"
"""The prefix of a dedupe key made from the body's hash (it expires with the window)."""
ResultKind = Literal["answer", "notice"]


@dataclass(frozen=True, slots=True)
class NewDelivery:
    hook: str
    dedupe_key: str
    agent_id: str
    caller: SecurityContext
    deliver_to: Address | None
    task: str


@dataclass(frozen=True, slots=True)
class HookDelivery:
    id: str
    hook: str
    agent_id: str
    caller: SecurityContext
    deliver_to: Address | None
    task: str
    state: str
    attempts: int
    result: str | None = None
    result_kind: ResultKind | None = None

    @property
    def gave_up(self) -> bool:
        """Claimed again after its last allowed attempt died with its daemon."""
        return self.state == "running" and self.attempts > MAX_ATTEMPTS


class HookStore(Protocol):
    """What the intake and the worker need; SQLite's is :class:`SqliteHookStore`,
    PostgreSQL's :class:`~thalos_bot.storage.pg.hooks.PgHookStore`."""

    async def receive(self, new: NewDelivery, now: datetime, window: float) -> bool:
        """Store ``new`` as pending; False when it was seen already (nothing stored)."""
        ...

    async def claim(
        self, now: datetime, replica: str, span: float, *, everyone: bool = False
    ) -> list[HookDelivery]: ...

    async def finish(self, delivery_id: str, result: str, kind: ResultKind, at: datetime) -> None:
        """Keep the run's result: it is delivered from here, once."""
        ...

    async def done(self, delivery_id: str, at: datetime) -> None: ...

    async def get(self, delivery_id: str) -> HookDelivery | None: ...


def new_delivery_id() -> str:
    return "hk_" + secrets.token_hex(8)


def delivery_of(row: sqlite3.Row | dict[str, object]) -> HookDelivery:
    channel, conversation = row["channel_id"], row["conversation_id"]
    roles = json.loads(str(row["roles"]))
    return HookDelivery(
        id=str(row["id"]),
        hook=str(row["hook"]),
        agent_id=str(row["agent_id"]),
        caller=SecurityContext.of(str(row["principal"]), roles),
        deliver_to=None
        if channel is None
        else Address(ChannelId(str(channel)), ConversationId(str(conversation))),
        task=str(row["task"]),
        state=str(row["state"]),
        attempts=int(str(row["attempts"])),
        result=None if row["result"] is None else str(row["result"]),
        result_kind=row["result_kind"],  # type: ignore[arg-type]
    )


def insert_values(new: NewDelivery, now: object) -> tuple[object, ...]:
    address = new.deliver_to
    return (
        new_delivery_id(),
        new.hook,
        new.dedupe_key,
        now,
        new.agent_id,
        new.caller.id,
        json.dumps(sorted(new.caller.roles)),
        None if address is None else address.channel_id,
        None if address is None else address.conversation_id,
        new.task,
    )


INSERT = (
    "INSERT INTO hook_deliveries (id, hook, dedupe_key, received_at, agent_id, principal,"
    " roles, channel_id, conversation_id, task) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
SEEN = "SELECT id, received_at FROM hook_deliveries WHERE hook = ? AND dedupe_key = ?"
RETIRE = "UPDATE hook_deliveries SET dedupe_key = dedupe_key || ':' || id WHERE id = ?"
OPEN = (
    "SELECT * FROM hook_deliveries WHERE state = 'pending' OR (state IN ('running',"
    " 'finished') AND (? OR claimed_until < ?)) ORDER BY received_at, id"
)
TAKE = (
    "UPDATE hook_deliveries SET state = ?, attempts = ?, claimed_by = ?, claimed_until = ?"
    " WHERE id = ?"
)


def taken(row: HookDelivery) -> tuple[str, int]:
    """The state and attempts of ``row`` once claimed: a finished row only needs its
    delivery (no new attempt); any other starts an attempt."""
    if row.state == "finished":
        return "finished", row.attempts
    return "running", row.attempts + 1


class SqliteHookStore:
    def __init__(self, database: Database) -> None:
        self._db = database

    async def receive(self, new: NewDelivery, now: datetime, window: float) -> bool:
        async with self._db.transaction() as conn:
            seen = await fetch_one(conn, SEEN, (new.hook, new.dedupe_key))
            if seen is not None:
                age = now - decode_time(seen["received_at"])
                if not new.dedupe_key.startswith(BODY_KEY) or age <= timedelta(seconds=window):
                    return False
                await conn.execute(RETIRE, (seen["id"],))
            await conn.execute(INSERT, insert_values(new, encode_time(now)))
        return True

    async def claim(
        self, now: datetime, replica: str, span: float, *, everyone: bool = False
    ) -> list[HookDelivery]:
        until = encode_time(now + timedelta(seconds=span))
        claimed: list[HookDelivery] = []
        async with self._db.transaction() as conn:
            for row in await fetch_all(conn, OPEN, (everyone, encode_time(now))):
                delivery = delivery_of(row)
                state, attempts = taken(delivery)
                await conn.execute(TAKE, (state, attempts, replica, until, delivery.id))
                claimed.append(replace(delivery, state=state, attempts=attempts))
        return claimed

    async def finish(self, delivery_id: str, result: str, kind: ResultKind, at: datetime) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE hook_deliveries SET state = 'finished', result = ?, result_kind = ?,"
                " finished_at = ? WHERE id = ?",
                (result, kind, encode_time(at), delivery_id),
            )

    async def done(self, delivery_id: str, at: datetime) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE hook_deliveries SET state = 'done', claimed_until = NULL,"
                " finished_at = coalesce(finished_at, ?) WHERE id = ?",
                (encode_time(at), delivery_id),
            )

    async def get(self, delivery_id: str) -> HookDelivery | None:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn, "SELECT * FROM hook_deliveries WHERE id = ?", (delivery_id,)
            )
        return None if row is None else delivery_of(row)
