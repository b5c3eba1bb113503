"""The PostgreSQL :class:`~thalos_bot.storage.protocol.SessionStore`.

A turn's commit locks its session's row (``FOR UPDATE``) first, so two replicas that
commit to one session at once append one after the other, never to the same ``seq``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from psycopg.rows import DictRow

from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.messages import Message, append_message, message_from_json, message_to_json
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.history_rows import decode_history
from thalos_bot.storage.pg.database import Connection, PgDatabase, fetch_all, fetch_one
from thalos_bot.storage.pg.outbox import insert_row
from thalos_bot.storage.pg.usage import add_spend
from thalos_bot.storage.protocol import (
    ContextState,
    LoadedHistory,
    OutboxAddress,
    OutboxEntry,
    SessionRecord,
    Spend,
)

_DUPLICATE = "A session with that id already exists."
_TAIL_BATCH = 128
_NO_SEQ = 2**62
_STATUS = "SELECT status FROM sessions WHERE id = %s"
_STATUS_LOCKED = "SELECT status FROM sessions WHERE id = %s FOR UPDATE"


FENCED = "Another replica has taken this conversation over; this turn was not kept."


class TurnFence(Protocol):
    async def admit(
        self, conn: Connection, session_id: SessionId, address: OutboxAddress | None
    ) -> bool: ...


class PgSessionStore:
    """Sessions and their history in a :class:`PgDatabase`.

    :meth:`aclose` does not close the database: whoever opened it closes it.
    """

    def __init__(self, db: PgDatabase, fence: TurnFence | None = None) -> None:
        self._db = db
        self.fence = fence
        """Replicas: asked inside each turn's commit whether this replica may still
        write it (see :class:`thalos_bot.cluster.leases.LeaseBook`)."""

    async def create(self, record: SessionRecord) -> None:
        """Insert a new session; an existing id raises ``AgentError(INVALID_REQUEST)``."""
        usage = record.usage
        created, updated = as_utc(record.created_at), as_utc(record.updated_at)
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "INSERT INTO sessions (id, agent_id, owner, status, created_at, updated_at,"
                " turns, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO NOTHING",
                (
                    record.id,
                    record.agent_id,
                    record.owner,
                    record.status,
                    created,
                    updated,
                    record.turns,
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                ),
            )
            if cursor.rowcount != 1:
                raise AgentError(ErrorCode.INVALID_REQUEST, _DUPLICATE)

    async def get(self, session_id: SessionId) -> SessionRecord | None:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT s.*, c.input_tokens AS context_tokens FROM sessions AS s"
                " LEFT JOIN session_context AS c ON c.session_id = s.id WHERE s.id = %s",
                (session_id,),
            )
        return None if row is None else _record(row)

    async def recent(self, limit: int = 50) -> list[SessionRecord]:
        """The ``limit`` sessions most recently active (open or closed), newest first."""
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT s.*, c.input_tokens AS context_tokens FROM sessions AS s"
                " LEFT JOIN session_context AS c ON c.session_id = s.id"
                " ORDER BY s.updated_at DESC, s.id LIMIT %s",
                (max(0, limit),),
            )
        return [_record(row) for row in rows]

    async def history(self, session_id: SessionId) -> list[Message]:
        """The full history, oldest first; an unknown session raises SESSION_NOT_FOUND."""
        async with self._db.read() as conn:
            if await _status(conn, session_id) is None:
                raise AgentError(ErrorCode.SESSION_NOT_FOUND)
            rows = await fetch_all(
                conn,
                "SELECT content FROM session_messages WHERE session_id = %s ORDER BY seq",
                (session_id,),
            )
        return _decode(rows)

    async def load_context(
        self, session_id: SessionId, *, max_chars: int | None = None
    ) -> LoadedHistory:
        """The context state and the history from its boundary on (see the protocol)."""
        async with self._db.read() as conn:
            if await _status(conn, session_id) is None:
                raise AgentError(ErrorCode.SESSION_NOT_FOUND)
            state = await _context(conn, session_id)
            start = state.summary_until
            if max_chars is None:
                rows = await fetch_all(
                    conn,
                    "SELECT seq, content FROM session_messages"
                    " WHERE session_id = %s AND seq >= %s ORDER BY seq",
                    (session_id, start),
                )
            else:
                rows = await _newest_fitting(conn, session_id, start, max_chars)
        if rows:
            start = int(rows[0]["seq"])
        messages = await decode_history([r["content"] for r in rows])
        return LoadedHistory(state, messages, start)

    async def save_context(self, session_id: SessionId, state: ContextState) -> None:
        """Replace the session's context state."""
        async with self._db.transaction() as conn:
            if await _status(conn, session_id, lock=True) is None:
                raise AgentError(ErrorCode.SESSION_NOT_FOUND)
            await _save_context(conn, session_id, state)

    async def commit_turn(
        self,
        session_id: SessionId,
        messages: Sequence[Message],
        usage: TokenUsage,
        at: datetime,
        *,
        context: ContextState | None = None,
        outbox: OutboxEntry | None = None,
        spend: Spend | None = None,
    ) -> None:
        """Append a turn atomically, with its outbox row and its spend when given.
        Unknown session: SESSION_NOT_FOUND; closed: SESSION_CLOSED."""
        stamp = as_utc(at)
        async with self._db.transaction() as conn:
            status = await _status(conn, session_id, lock=True)
            if status is None:
                raise AgentError(ErrorCode.SESSION_NOT_FOUND)
            if status == "closed":
                raise AgentError(ErrorCode.SESSION_CLOSED)
            if self.fence is not None and not await self.fence.admit(
                conn, session_id, None if outbox is None else outbox.address
            ):
                raise AgentError(ErrorCode.SESSION_BUSY, FENCED)
            if messages:
                await _append(conn, session_id, messages)
            if context is not None:
                await _save_context(conn, session_id, context)
            await conn.execute(
                "UPDATE sessions SET turns = turns + 1,"
                " input_tokens = input_tokens + %s, output_tokens = output_tokens + %s,"
                " cache_read_tokens = cache_read_tokens + %s,"
                " cache_write_tokens = cache_write_tokens + %s,"
                " updated_at = %s WHERE id = %s",
                (
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    stamp,
                    session_id,
                ),
            )
            if outbox is not None:
                await insert_row(conn, outbox, at)
            if spend is not None:
                await add_spend(conn, spend)

    async def close(self, session_id: SessionId, at: datetime) -> None:
        """Mark the session closed; closing a closed session changes nothing."""
        stamp = as_utc(at)
        async with self._db.transaction() as conn:
            status = await _status(conn, session_id, lock=True)
            if status is None:
                raise AgentError(ErrorCode.SESSION_NOT_FOUND)
            if status == "open":
                await conn.execute(
                    "UPDATE sessions SET status = 'closed', updated_at = %s WHERE id = %s",
                    (stamp, session_id),
                )

    async def aclose(self) -> None:
        """Nothing to release: the shared pool stays open."""


async def _status(conn: Connection, session_id: SessionId, *, lock: bool = False) -> str | None:
    row = await fetch_one(conn, _STATUS_LOCKED if lock else _STATUS, (session_id,))
    return None if row is None else str(row["status"])


def _decode(rows: Sequence[DictRow]) -> list[Message]:
    return [message_from_json(r["content"]) for r in rows]


async def _context(conn: Connection, session_id: SessionId) -> ContextState:
    row = await fetch_one(
        conn,
        "SELECT summary, summary_until, input_tokens, estimated_tokens"
        " FROM session_context WHERE session_id = %s",
        (session_id,),
    )
    if row is None:
        return ContextState()
    return ContextState(
        row["summary"],
        int(row["summary_until"]),
        int(row["input_tokens"]),
        int(row["estimated_tokens"]),
    )


async def _save_context(conn: Connection, session_id: SessionId, state: ContextState) -> None:
    await conn.execute(
        "INSERT INTO session_context"
        " (session_id, summary, summary_until, input_tokens, estimated_tokens)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET"
        " summary = excluded.summary, summary_until = excluded.summary_until,"
        " input_tokens = excluded.input_tokens, estimated_tokens = excluded.estimated_tokens",
        (
            session_id,
            state.summary,
            state.summary_until,
            state.input_tokens,
            state.estimated_tokens,
        ),
    )


async def _newest_fitting(
    conn: Connection, session_id: SessionId, start: int, max_chars: int
) -> list[DictRow]:
    """The newest rows (seq at least ``start``) whose contents fit in ``max_chars``, at
    least the last one, oldest first; read newest first in batches."""
    rows: list[DictRow] = []
    size, before = 0, _NO_SEQ
    while True:
        batch = await fetch_all(
            conn,
            "SELECT seq, content FROM session_messages"
            " WHERE session_id = %s AND seq >= %s AND seq < %s ORDER BY seq DESC LIMIT %s",
            (session_id, start, before, _TAIL_BATCH),
        )
        for row in batch:
            size += len(row["content"])
            if size > max_chars and rows:
                rows.reverse()
                return rows
            rows.append(row)
        if len(batch) < _TAIL_BATCH:
            rows.reverse()
            return rows
        before = int(batch[-1]["seq"])


async def _append(conn: Connection, session_id: SessionId, messages: Sequence[Message]) -> None:
    last = await fetch_one(
        conn,
        "SELECT seq, content FROM session_messages WHERE session_id = %s ORDER BY seq DESC LIMIT 1",
        (session_id,),
    )
    stored = None if last is None else message_from_json(last["content"])
    tail: list[Message] = [] if stored is None else [stored]
    for message in messages:
        tail = append_message(tail, message)
    seq = 0
    if last is not None:
        seq = int(last["seq"])
        if tail[0] != stored:
            await conn.execute(
                "UPDATE session_messages SET content = %s WHERE session_id = %s AND seq = %s",
                (message_to_json(tail[0]), session_id, seq),
            )
        tail = tail[1:]
        seq += 1
    rows = [(session_id, seq + i, m.role, message_to_json(m)) for i, m in enumerate(tail)]
    if rows:
        async with conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO session_messages (session_id, seq, role, content)"
                " VALUES (%s, %s, %s, %s)",
                rows,
            )


def _record(row: DictRow) -> SessionRecord:
    status = row["status"]
    if status not in ("open", "closed"):
        raise ValueError(f"unknown session status {status!r}")
    return SessionRecord(
        id=SessionId(row["id"]),
        agent_id=AgentId(row["agent_id"]),
        owner=row["owner"],
        status="open" if status == "open" else "closed",
        created_at=as_utc(row["created_at"]),
        updated_at=as_utc(row["updated_at"]),
        turns=int(row["turns"]),
        usage=TokenUsage(
            input_tokens=int(row["input_tokens"]),
            output_tokens=int(row["output_tokens"]),
            cache_read_tokens=int(row["cache_read_tokens"]),
            cache_write_tokens=int(row["cache_write_tokens"]),
        ),
        context_tokens=int(row["context_tokens"] or 0),
    )
