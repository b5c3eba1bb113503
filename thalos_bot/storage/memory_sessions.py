"""An in-memory :class:`~thalos_bot.storage.protocol.SessionStore` for tests and demos.

It behaves like the SQLite store: messages are kept as JSON (so later changes to a
caller's objects do not leak in), timestamps are normalised to UTC, and the same
errors are raised.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.messages import Message, append_message, message_from_json, message_to_json
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.protocol import (
    ContextState,
    LoadedHistory,
    OutboxEntry,
    SessionRecord,
    Spend,
)
from thalos_bot.storage.usage import MemoryUsageLedger


class MemorySessionStore:
    """Sessions in a dict; lost when the process ends."""

    def __init__(self, ledger: MemoryUsageLedger | None = None) -> None:
        self.ledger = ledger or MemoryUsageLedger()
        """The usage ledger turns add their spend to (give the same one to the limits)."""
        self._records: dict[SessionId, SessionRecord] = {}
        self._messages: dict[SessionId, list[str]] = {}
        self._context: dict[SessionId, ContextState] = {}
        self.outbox: list[OutboxEntry] = []
        """The outbox rows turns added, in order (nothing delivers them here)."""

    async def create(self, record: SessionRecord) -> None:
        """Insert a new session; an existing id raises ``AgentError(INVALID_REQUEST)``."""
        if record.id in self._records:
            raise AgentError(ErrorCode.INVALID_REQUEST, "A session with that id already exists.")
        self._records[record.id] = dataclasses.replace(
            record, created_at=as_utc(record.created_at), updated_at=as_utc(record.updated_at)
        )
        self._messages[record.id] = []

    async def get(self, session_id: SessionId) -> SessionRecord | None:
        record = self._records.get(session_id)
        context = self._context.get(session_id)
        if record is None or context is None:
            return record
        return dataclasses.replace(record, context_tokens=context.input_tokens)

    async def recent(self, limit: int = 50) -> list[SessionRecord]:
        """The ``limit`` sessions most recently active (open or closed), newest first."""
        found = [await self.get(session_id) for session_id in self._records]
        records = [record for record in found if record is not None]
        records.sort(key=lambda record: record.id)
        records.sort(key=lambda record: record.updated_at, reverse=True)
        return records[: max(0, limit)]

    async def history(self, session_id: SessionId) -> list[Message]:
        """The full history, oldest first; an unknown session raises SESSION_NOT_FOUND."""
        self._require(session_id)
        return [message_from_json(raw) for raw in self._messages[session_id]]

    async def load_context(
        self, session_id: SessionId, *, max_chars: int | None = None
    ) -> LoadedHistory:
        """The context state and the history from its boundary on (see the protocol)."""
        self._require(session_id)
        state = self._context.get(session_id, ContextState())
        stored = self._messages[session_id]
        start = state.summary_until
        if max_chars is not None and start < len(stored):
            first, size = len(stored) - 1, 0
            for index in range(len(stored) - 1, start - 1, -1):
                size += len(stored[index])
                if size > max_chars:
                    break
                first = index
            start = first
        messages = [message_from_json(raw) for raw in stored[start:]]
        return LoadedHistory(state, messages, start)

    async def save_context(self, session_id: SessionId, state: ContextState) -> None:
        """Replace the session's context state."""
        self._require(session_id)
        self._context[session_id] = state

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
        """Append a turn (and its outbox row, and its spend to :attr:`ledger`). Unknown
        session: SESSION_NOT_FOUND; closed: SESSION_CLOSED."""
        record = self._require(session_id)
        at = as_utc(at)
        if record.status == "closed":
            raise AgentError(ErrorCode.SESSION_CLOSED)
        stored = self._messages[session_id]
        keep = max(len(stored) - 1, 0)
        tail = [message_from_json(raw) for raw in stored[keep:]]
        for message in messages:
            tail = append_message(tail, message)
        encoded = [message_to_json(m) for m in tail]  # may raise: nothing changed yet
        stored[keep:] = encoded
        if context is not None:
            self._context[session_id] = context
        self._records[session_id] = dataclasses.replace(
            record, turns=record.turns + 1, usage=record.usage + usage, updated_at=at
        )
        if outbox is not None:
            self.outbox.append(outbox)
        if spend is not None:
            self.ledger.take(spend)

    async def close(self, session_id: SessionId, at: datetime) -> None:
        """Mark the session closed; closing a closed session changes nothing."""
        record = self._require(session_id)
        at = as_utc(at)
        if record.status == "open":
            self._records[session_id] = dataclasses.replace(record, status="closed", updated_at=at)

    async def aclose(self) -> None:
        """Nothing to release."""

    def _require(self, session_id: SessionId) -> SessionRecord:
        record = self._records.get(session_id)
        if record is None:
            raise AgentError(ErrorCode.SESSION_NOT_FOUND)
        return record
