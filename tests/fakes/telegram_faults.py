"""Fault injection for the Telegram fake: what to do to the next matching request.

Faults queue up in order; a request takes the first one whose method matches
(`method=None` matches any method, getUpdates included), and each fault lasts
`times` requests.

- "fail": answer with an error instead of processing the request (or, with
  `applied=True`, after processing it: a 5xx from a gateway whose backend did the work)
- "timeout": process the request, then never answer
- "close": process the request, then close the connection without an answer
- "drop": close the connection without processing the request
- "stall": never answer and never process the request (a server that hangs before it
  gets to it; the client's timeout ends it)
- "spare": nothing (the request is served as usual), so that a fault queued after it hits
  a later request

`user_says` makes the chat's user post that text just before the request is handled
(the message takes the next id of its counter, and its update is queued), to test what a
client does when the user writes while one of its calls is in doubt. `others_say`
(every kind) does the same in other chats ({chat id: text}, each posted by that chat's
user, or by user 1 in a group): those messages take their ids, from the bot account's
counter in a private chat or a basic group, just before the request takes its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tests.fakes.telegram_wire import TERMINATED, ApiError, canonical_method, too_many_requests

FaultKind = Literal["fail", "timeout", "close", "drop", "stall", "spare"]

_DESCRIPTIONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden: bot was blocked by the user",
    404: "Not Found",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


@dataclass
class Fault:
    method: str | None
    kind: FaultKind
    times: int = 1
    error: int = 0
    retry_after: int | None = None
    description: str | None = None
    applied: bool = False
    user_says: str | None = None
    others_say: tuple[tuple[int, str], ...] = ()
    answer_after: float = 0.0
    """Seconds the answer takes to leave once the request is recorded (a slow network)."""

    def api_error(self, method: str) -> ApiError:
        """The answer for a "fail" fault (a 429 carries parameters.retry_after)."""
        if self.error == 429:
            error = too_many_requests(max(1, self.retry_after or 1))
        elif self.error == 409:
            default = TERMINATED if method == "getUpdates" else "Conflict"
            error = ApiError(409, default, retry_after=self.retry_after)
        else:
            default = _DESCRIPTIONS.get(self.error, "Internal Server Error")
            error = ApiError(self.error, default, retry_after=self.retry_after)
        if self.description is not None:
            error.description = self.description
        return error


class FaultQueue:
    """Not thread-safe: the fake locks around it."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        if fault.method is not None:
            fault.method = canonical_method(fault.method) or fault.method
        self._faults.append(fault)

    def holds(self, method: str) -> bool:
        """Is a fault for ``method`` still waiting for its request?"""
        return any(fault.method == method for fault in self._faults)

    def take(self, method: str) -> Fault | None:
        for fault in self._faults:
            if fault.method in (None, method):
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                return fault
        return None
