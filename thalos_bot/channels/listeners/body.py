"""Every request body bounded by the bytes that arrive, not by what the request declares.

A ``Content-Length`` is a claim; a chunked body has none at all. :class:`BodyCap` sits in
front of every route and counts what each route actually reads: past the path's limit
the read raises :class:`BodyTooLargeError`, which the app answers with 413 (a route may
catch it first to say more). What was read up to then is at most the limit and one
chunk, so no route can be made to hold more than that in memory.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SMALL_BODY = 64 * 1024
"""What a form or JSON answer of the page or the dashboard may weigh."""
TOO_LARGE = "That request is too large."


class BodyTooLargeError(Exception):
    """A route read more of a body than its path allows."""


def counted(receive: Receive, limit: int) -> Receive:
    """``receive``, raising :class:`BodyTooLargeError` once the body passes ``limit``."""
    seen = 0

    async def counting() -> Message:
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > limit:
            raise BodyTooLargeError
        return message

    return counting


class BodyCap:
    """Counts every HTTP request's body against ``limit_of(path)``."""

    def __init__(self, app: ASGIApp, limit_of: Callable[[str], int]) -> None:
        self._app = app
        self._limit_of = limit_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            receive = counted(receive, self._limit_of(scope["path"]))
        await self._app(scope, receive, send)


async def too_large(_request: Request, _exc: Exception) -> Response:
    """The app's answer to a body past its limit that no route answered itself."""
    return JSONResponse({"error": TOO_LARGE}, status_code=413)
