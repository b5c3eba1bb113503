"""One typed error for the whole agent surface.

``AgentError.detail`` is shown to users, so it is always a sentence we wrote. Raw
exception, HTTP, SQL or provider text may only travel in ``AgentError.__cause__``,
which goes to the log, never to a channel.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    AGENT_NOT_FOUND = "agent_not_found"
    SESSION_NOT_FOUND = "session_not_found"
    SESSION_BUSY = "session_busy"
    SESSION_CLOSED = "session_closed"
    PERMISSION_DENIED = "permission_denied"
    PROVIDER_ERROR = "provider_error"
    TOOL_ERROR = "tool_error"
    CANCELLED = "cancelled"
    INVALID_REQUEST = "invalid_request"
    LIMIT_REACHED = "limit_reached"
    INTERNAL_ERROR = "internal_error"


_DEFAULT_DETAIL: dict[ErrorCode, str] = {
    ErrorCode.AGENT_NOT_FOUND: "There is no agent with that id.",
    ErrorCode.SESSION_NOT_FOUND: "That session does not exist.",
    ErrorCode.SESSION_BUSY: "A turn is already running in this session.",
    ErrorCode.SESSION_CLOSED: "That session has ended.",
    ErrorCode.PERMISSION_DENIED: "That session belongs to someone else.",
    ErrorCode.PROVIDER_ERROR: "The model provider could not answer.",
    ErrorCode.TOOL_ERROR: "A tool failed.",
    ErrorCode.CANCELLED: "The turn was cancelled.",
    ErrorCode.INVALID_REQUEST: "The request was not valid.",
    ErrorCode.LIMIT_REACHED: "A spending limit has been reached.",
    ErrorCode.INTERNAL_ERROR: "Something went wrong inside the bot; the details are in its log.",
}


class AgentError(Exception):
    """An error with a stable ``code`` and a user-safe ``detail``."""

    def __init__(self, code: ErrorCode, detail: str | None = None) -> None:
        self.code = code
        self.detail = detail or _DEFAULT_DETAIL[code]
        super().__init__(f"{code.value}: {self.detail}")

    def __reduce__(self) -> tuple[type[AgentError], tuple[ErrorCode, str]]:
        return (type(self), (self.code, self.detail))
