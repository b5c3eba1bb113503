"""The :class:`SessionStore` seam: sessions, their state and their history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.messages import Message

SessionStatus = Literal["open", "closed"]


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


class SessionStore(Protocol):
    async def create(self, record: SessionRecord) -> None:
        """Insert a new session. Its id must be new."""
        ...

    async def get(self, session_id: SessionId) -> SessionRecord | None: ...

    async def history(self, session_id: SessionId) -> list[Message]:
        """The full message history, oldest first."""
        ...

    async def commit_turn(
        self,
        session_id: SessionId,
        messages: Sequence[Message],
        usage: TokenUsage,
        at: datetime,
    ) -> None:
        """Atomically append one turn's messages, add its usage, count it, touch
        ``updated_at``. Consecutive messages of one role are merged (see
        :func:`thalos_bot.domain.messages.append_message`)."""
        ...

    async def close(self, session_id: SessionId, at: datetime) -> None:
        """Mark the session closed. Closing is terminal."""
        ...

    async def aclose(self) -> None:
        """Release resources (not the same as closing a session)."""
        ...
