"""The permission gate: a policy's ``action`` applied before a tool call is dispatched.

``allow`` passes; ``deny`` refuses; ``ask`` puts the call to the person behind the
conversation through the turn's :class:`~thalos_bot.tools.approval.Approver` and waits at
most ``timeout`` seconds. No approver (a detached run), no answer in time, an approver
that fails, or ``/cancel`` all mean no. "Approve for this session" remembers the tool
for that session only, in :class:`SessionApprovals` (the daemon keeps them in its
database with the session, so a restart does not ask again). Every ask's outcome and
every policy denial is audited and logged; argument values never are (the audit keeps
a hash).

A refusal is a :class:`~thalos_bot.tools.types.ToolResult` the model reads, never an
exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

import anyio
import structlog

from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.ids import SessionId
from thalos_bot.tools.approval import (
    SHUTDOWN,
    ApprovalAnswer,
    ApprovalRequest,
    Approver,
    arguments_hash,
)
from thalos_bot.tools.policy import PolicySet
from thalos_bot.tools.types import ToolCall, ToolContext, ToolResult

log = structlog.get_logger(__name__)

Decision = Literal["approved", "approved-session", "denied", "timeout", "cancelled"]


@dataclass(frozen=True, slots=True)
class AuditEntry:
    at: datetime
    session_id: SessionId
    conversation: str
    """The conversation asked (``channel:conversation``); empty when nobody was asked."""
    tool: str
    arguments_hash: str
    decision: Decision
    decided_by: str
    """A person (``telegram:42``, ``console``) or a rule (``policy``, ``no approver``,
    ``session approval``, ``timeout``, ``cancel``, ``error``, ``shutdown``)."""


class AuditSink(Protocol):
    async def record(self, entry: AuditEntry) -> None: ...


class SessionApprovals(Protocol):
    """The tools a person approved for the rest of a session."""

    async def approved(self, session_id: SessionId) -> frozenset[str]:
        """The qualified tool names approved for ``session_id``."""
        ...

    async def remember(self, session_id: SessionId, tool: str, at: datetime) -> None:
        """Keep ``tool`` approved for ``session_id``."""
        ...


class MemorySessionApprovals:
    """Session approvals in a dict: lost when the process ends."""

    def __init__(self) -> None:
        self._tools: dict[SessionId, set[str]] = {}

    async def approved(self, session_id: SessionId) -> frozenset[str]:
        return frozenset(self._tools.get(session_id, ()))

    async def remember(self, session_id: SessionId, tool: str, at: datetime) -> None:
        self._tools.setdefault(session_id, set()).add(tool)


def _minutes(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} seconds"


class PermissionGate:
    """Decides, per call, whether the catalog may dispatch it."""

    def __init__(
        self,
        policies: PolicySet,
        *,
        timeout: float = 120.0,
        audit: AuditSink | None = None,
        clock: Callable[[], datetime] = utc_now,
        approvals: SessionApprovals | None = None,
    ) -> None:
        self._policies = policies
        self.timeout = timeout
        self.audit = audit
        self._clock = clock
        self.approvals: SessionApprovals = approvals or MemorySessionApprovals()
        self._remembered: dict[SessionId, set[str]] = {}
        """This process's session approvals, also when they could not be stored."""
        self._waiting: dict[SessionId, list[str]] = {}

    def waiting_for(self, session_id: SessionId) -> list[str]:
        """The tools of ``session_id`` waiting for an answer right now (for ``/status``)."""
        return list(self._waiting.get(session_id, ()))

    async def check(
        self, qualified: str, natural: str, call: ToolCall, context: ToolContext
    ) -> ToolResult | None:
        """None when the call may run; otherwise the refusal the model reads."""
        action = self._policies.action(qualified, natural)
        if action == "allow":
            return None
        sid = context.session_id
        request = ApprovalRequest(qualified, call.arguments, sid, context.caller.id)
        if action == "deny":
            await self._record(request, "", "denied", "policy")
            return ToolResult(
                f"The tool {qualified!r} is not allowed here (a tool policy denies it).",
                "refused",
            )
        if await self._remembered_for(sid, qualified):
            await self._record(request, "", "approved", "session approval")
            return None
        approver = context.approver
        if approver is None:
            await self._record(request, "", "denied", "no approver")
            return ToolResult(
                f"The tool {qualified!r} needs a person's approval, and there is nobody to "
                "ask in this run, so it was not run.",
                "refused",
            )
        where = approver.conversation
        answer = await self._ask(approver, request)
        if answer is None:
            await self._record(request, where, "timeout", "timeout")
            return ToolResult(
                f"The call to {qualified!r} was not approved: nobody answered within "
                f"{_minutes(self.timeout)}, so it was not run.",
                "refused",
            )
        await self._record(request, where, answer.verdict, answer.decided_by)
        if answer.verdict == "approved-session":
            await self._remember(sid, qualified)
        if answer.verdict == "denied" and answer.decided_by == SHUTDOWN:
            return ToolResult(
                f"The call to {qualified!r} was not run: the bot is shutting down, so the "
                "question was withdrawn before anyone answered it.",
                "refused",
            )
        if answer.verdict == "denied":
            return ToolResult(
                f"The user did not approve the call to {qualified!r}, so it was not run.",
                "refused",
            )
        return None

    async def _remembered_for(self, sid: SessionId, qualified: str) -> bool:
        if qualified in self._remembered.get(sid, ()):
            return True
        try:
            return qualified in await self.approvals.approved(sid)
        except Exception:  # unreadable: ask the person again, never assume a yes
            log.exception("tool-session-approvals-unreadable", session_id=sid)
            return False

    async def _remember(self, sid: SessionId, qualified: str) -> None:
        self._remembered.setdefault(sid, set()).add(qualified)
        try:
            await self.approvals.remember(sid, qualified, self._clock())
        except Exception:  # kept for this process; a restart asks again
            log.exception("tool-session-approval-not-stored", tool=qualified, session_id=sid)

    async def _ask(
        self,
        approver: Approver,
        request: ApprovalRequest,
    ) -> ApprovalAnswer | None:
        waiting = self._waiting.setdefault(request.session_id, [])
        waiting.append(request.tool)
        answer: ApprovalAnswer | None = None
        try:
            with anyio.move_on_after(self.timeout):
                answer = await approver.ask(request)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._record(request, approver.conversation, "cancelled", "cancel")
            raise
        except Exception:
            log.exception("tool-approval-failed", tool=request.tool, session_id=request.session_id)
            return ApprovalAnswer("denied", "error")
        finally:
            waiting.remove(request.tool)
            if not waiting:
                self._waiting.pop(request.session_id, None)
        return answer

    async def _record(
        self, request: ApprovalRequest, conversation: str, decision: Decision, decided_by: str
    ) -> None:
        session_id, tool = request.session_id, request.tool
        digest = arguments_hash(request.arguments)
        log.info(
            "tool-approval",
            tool=tool,
            session_id=session_id,
            conversation=conversation,
            decision=decision,
            decided_by=decided_by,
            arguments_sha256=digest[:16],
        )
        if self.audit is None:
            return
        entry = AuditEntry(
            self._clock(), session_id, conversation, tool, digest, decision, decided_by
        )
        try:
            await self.audit.record(entry)
        except Exception:
            log.exception("tool-audit-failed", tool=tool, session_id=session_id)
