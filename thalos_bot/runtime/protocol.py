"""The :class:`AgentRuntime` seam and the values that cross it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from thalos_bot.domain.address import Address
from thalos_bot.domain.attachments import Inbound
from thalos_bot.domain.events import AgentEvent, TerminalEvent, TokenUsage, TurnCompleted
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.storage.protocol import OutboxAddress, SessionStatus
from thalos_bot.tools.approval import Approver


@dataclass(frozen=True, slots=True)
class TurnRequest:
    session_id: SessionId
    caller: SecurityContext
    text: str
    deliver_to: OutboxAddress | None = None
    """Where the final answer goes: given, it is written to the outbox with the turn."""
    attachments: tuple[Inbound, ...] = ()
    """Media and files sent with the text (the text may then be empty)."""
    approver: Approver | None = None
    """Who to ask about an "ask" tool call (bound to the conversation); None: nobody, deny."""
    reply_to: Address | None = None
    """The conversation the turn came from, for tools that answer later (schedules)."""
    depth: int = 0
    """0 for a person's turn; a subagent run one level deeper per delegation."""


@dataclass(frozen=True, slots=True)
class TurnResult:
    """A buffered turn: every event in order, and the terminal one."""

    events: Sequence[AgentEvent]
    terminal: TerminalEvent

    @property
    def ok(self) -> bool:
        return isinstance(self.terminal, TurnCompleted)

    @property
    def text(self) -> str:
        if isinstance(self.terminal, TurnCompleted):
            return self.terminal.text
        return self.terminal.partial_text


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: SessionId
    agent_id: AgentId
    owner: str
    status: SessionStatus
    created_at: datetime
    updated_at: datetime
    turns: int
    usage: TokenUsage
    busy: bool
    context_tokens: int = 0
    """The prompt size of the session's last model call, as the provider reported it."""
    context_window: int = 0


class AgentRuntime(Protocol):
    async def create_session(self, agent_id: str, caller: SecurityContext) -> SessionInfo: ...

    async def session_info(self, session_id: SessionId) -> SessionInfo | None:
        """None when the runtime does not know the session."""
        ...

    async def run_turn(self, request: TurnRequest) -> TurnResult: ...

    def run_turn_streaming(self, request: TurnRequest) -> AsyncIterator[AgentEvent]:
        """Events of one turn, always ending in exactly one TurnCompleted or TurnFailed."""
        ...

    async def close_session(self, session_id: SessionId, caller: SecurityContext) -> None: ...

    async def cancel(self, session_id: SessionId, caller: SecurityContext) -> bool:
        """Stop the running turn; False when nothing was running."""
        ...

    def is_busy(self, session_id: SessionId) -> bool: ...
