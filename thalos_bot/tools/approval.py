"""The ask port: how a tool call waits for a person's yes or no.

A channel that can ask (a Telegram inline keyboard, a console prompt) implements
:class:`AsksApproval`; the pump binds it to one conversation as an :class:`Approver` and
hands that to the turn. A turn with no approver (a scheduled or delegated run) has nobody
to ask, so every "ask" in it is refused. This module imports nothing from channels or the
runtime, so both sides can depend on it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from thalos_bot.domain.ids import ConversationId, SessionId

Verdict = Literal["approved", "approved-session", "denied"]
"""A person's answer: once, for the rest of the session, or no."""

PREVIEW_VALUE_CHARS = 80
"""A longer string argument is cut to this many characters in the question."""
PREVIEW_CHARS = 300
"""The whole argument view is cut to this many characters."""


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One tool call waiting for a decision."""

    tool: str
    """The qualified name the model used."""
    arguments: Mapping[str, Any]
    session_id: SessionId
    caller: str = ""
    """The principal whose turn made the call: they answer it (or an approver)."""

    @property
    def preview(self) -> str:
        return preview_arguments(self.arguments)


SHUTDOWN = "shutdown"
"""``decided_by`` of a question a channel withdrew because it is stopping: a denial the
model is told the reason of."""


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    verdict: Verdict
    decided_by: str
    """Who answered, for the audit and the edited question: a user id or a display name
    (or :data:`SHUTDOWN`)."""


class Approver(Protocol):
    """Asks the person behind one conversation. Cancelling :meth:`ask` withdraws the
    question (a timeout or ``/cancel``); the implementation must then show that it no
    longer counts."""

    @property
    def conversation(self) -> str:
        """``channel:conversation``, for the audit."""
        ...

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer: ...


@runtime_checkable
class AsksApproval(Protocol):
    """A channel adapter that can put a question to a conversation."""

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer: ...


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > PREVIEW_VALUE_CHARS:
        return f"{value[:PREVIEW_VALUE_CHARS]}… ({len(value)} chars)"
    if isinstance(value, Mapping):
        return {str(k): _cut(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cut(v) for v in value]
    return value


def preview_arguments(arguments: Mapping[str, Any]) -> str:
    """A short one-line JSON view of ``arguments``: long strings cut, the whole bounded."""
    text = json.dumps(_cut(arguments), ensure_ascii=False, default=str)
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1] + "…"
    return text


def arguments_hash(arguments: Mapping[str, Any]) -> str:
    """A stable SHA-256 of the arguments (keys sorted), for the audit: it tells two calls
    apart without storing what they carried."""
    canonical = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()
