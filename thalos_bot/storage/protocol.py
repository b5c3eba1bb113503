"""The :class:`SessionStore` seam: sessions, their state and their history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId, SessionId
from thalos_bot.domain.messages import Message
from thalos_bot.domain.pricing import ModelUsages

SessionStatus = Literal["open", "closed"]
OutboxKind = Literal["answer", "notice", "voice"]
"""``voice``: one clip of a spoken answer; the row's text is the clip's description
(:mod:`thalos_bot.service.clip_files`), its audio a file in the state folder."""


@dataclass(frozen=True, slots=True)
class OutboxAddress:
    """Where a turn's final answer goes, and the key its outbox row gets. The runtime
    passes it through without interpreting it."""

    channel_id: ChannelId
    conversation_id: ConversationId
    key: str
    begun: int | None = None
    """The turn journal's entry of the turn this answers (:mod:`.turn_journal`, one
    daemon on SQLite): the row's insert forgets it in the same transaction, so a kill
    right after the commit leaves the answer to deliver and no cut turn to tell."""


@dataclass(frozen=True, slots=True)
class OutboxEntry:
    """A message that must not be lost: written in the same transaction as its turn."""

    address: OutboxAddress
    text: str
    kind: OutboxKind = "answer"


@dataclass(frozen=True, slots=True)
class Spend:
    """One turn's usage, for its principal's day in the usage ledger (and, by model, for
    its session): written in the same transaction as its turn, so the session's count and
    the day's never disagree."""

    principal: str
    day: str
    """The calendar date in the limits' time zone (``2026-12-01``)."""
    usage: TokenUsage
    cost_usd: float = 0.0
    session: str = ""
    """The session the turn is stored in ("" for a turn not stored)."""
    models: ModelUsages = ModelUsages()
    """``usage`` by the model that spent it, kept per session (for its cost in /status)."""
    agent: str = ""
    """The agent whose turn it was ("" when not known)."""
    breakdown: tuple[tuple[str, TokenUsage, float], ...] = ()
    """``models`` with each one's estimated cost: (model, tokens, dollars)."""


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: SessionId
    agent_id: AgentId
    owner: str
    status: SessionStatus
    created_at: datetime
    updated_at: datetime
    turns: int = 0
    usage: TokenUsage = TokenUsage()
    context_tokens: int = 0
    """The prompt size the provider reported for the session's last model call."""


@dataclass(frozen=True, slots=True)
class ContextState:
    """What a session keeps about its context window, besides the history itself.

    Messages before ``summary_until`` are no longer sent: ``summary`` (the model's own
    summary of them, ``""`` when they were dropped unsummarized) stands in for them.
    The full history stays stored. ``input_tokens`` is what the provider reported for
    the last model call and ``estimated_tokens`` our character estimate of that same
    call; together they calibrate the estimate of the next request.
    """

    summary: str = ""
    summary_until: int = 0
    input_tokens: int = 0
    estimated_tokens: int = 0


@dataclass(frozen=True, slots=True)
class LoadedHistory:
    """The part of a history a turn needs: from ``context.summary_until`` on."""

    context: ContextState
    messages: list[Message]
    first_index: int
    """The position of ``messages[0]`` in the full stored history."""


class SessionStore(Protocol):
    async def create(self, record: SessionRecord) -> None:
        """Insert a new session. Its id must be new."""
        ...

    async def get(self, session_id: SessionId) -> SessionRecord | None: ...

    async def history(self, session_id: SessionId) -> list[Message]:
        """The full message history, oldest first."""
        ...

    async def load_context(
        self, session_id: SessionId, *, max_chars: int | None = None
    ) -> LoadedHistory:
        """The context state and the messages from its ``summary_until`` on, oldest
        first, without reading the older history. With ``max_chars``, only the newest
        messages whose stored size fits in it are read (at least the last one).
        An unknown session raises SESSION_NOT_FOUND."""
        ...

    async def save_context(self, session_id: SessionId, state: ContextState) -> None:
        """Replace the session's context state. SESSION_NOT_FOUND when unknown."""
        ...

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
        """Atomically append one turn's messages, add its usage, count it, touch
        ``updated_at``, when given replace the context state (see :meth:`save_context`),
        when given add ``outbox`` as a pending outbox row and, when given, add ``spend``
        to the usage ledger kept with the store (the same database). Consecutive
        messages of one role are merged (see
        :func:`thalos_bot.domain.messages.append_message`)."""
        ...

    async def close(self, session_id: SessionId, at: datetime) -> None:
        """Mark the session closed. Closing is terminal."""
        ...

    async def aclose(self) -> None:
        """Release resources (not the same as closing a session)."""
        ...
