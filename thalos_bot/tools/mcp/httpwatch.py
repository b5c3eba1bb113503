"""What the HTTP exchanges of a streamable-HTTP connection tell us that the SDK does not.

The SDK turns a 404 for our session into a JSON-RPC error ("Session not found", or a
bare "Session terminated") and a refused TCP connection into a closed connection; the
HTTP status and the fact that the request never left are lost on the way. An httpx
transport below the SDK sees both, and reports them:

- to the connection's :class:`Lifeline`: the session is gone (the spec's "HTTP 404 for
  a session id": start a new session) or the server cannot be reached, so the
  connection is over even while nobody is calling;
- to the :class:`CallProbe` of the tool call whose POST it was (found through a context
  variable: the SDK sends each request in the context of the task that made it): that
  call was not run by the server, so running it on a new session is safe.
"""

from __future__ import annotations

import contextvars
import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import anyio
import httpx2

SESSION_HEADER = "mcp-session-id"
SESSION_LOST = "the server no longer knows this session (it may have restarted)"

Undelivered = Literal["session", "unreachable"]


class Lifeline:
    """Set once when a connection ends, with why (``None`` when we closed it)."""

    def __init__(self) -> None:
        self.ended = anyio.Event()
        self.reason: str | None = None
        self.session_lost = False
        """The server answered 404 to our session id: it is up, the session is gone."""

    def end(self, reason: str | None) -> None:
        if not self.ended.is_set():
            self.reason = reason
            self.ended.set()

    def lose_session(self) -> None:
        if not self.ended.is_set():
            self.session_lost = True
        self.end(SESSION_LOST)


@dataclass(slots=True)
class CallProbe:
    """What the transport saw of one ``tools/call`` request."""

    undelivered: Undelivered | None = None
    """Why the server never ran it: our session was refused, or it was unreachable."""


_CURRENT: contextvars.ContextVar[CallProbe | None] = contextvars.ContextVar(
    "thalos_mcp_call_probe", default=None
)


@contextmanager
def watch_call() -> Iterator[CallProbe]:
    """Probe the ``tools/call`` request the current task sends inside the block."""
    probe = CallProbe()
    token = _CURRENT.set(probe)
    try:
        yield probe
    finally:
        _CURRENT.reset(token)


def _is_tool_call(request: httpx2.Request) -> bool:
    if request.method != "POST":
        return False
    try:
        body = json.loads(request.content)
    except (httpx2.RequestNotRead, ValueError):
        return False
    return isinstance(body, dict) and body.get("method") == "tools/call" and "id" in body


class _Watch(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, lifeline: Lifeline, url: str) -> None:
        self._inner = inner
        self._lifeline = lifeline
        self._url = url

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        probe = _CURRENT.get()
        if probe is not None and not _is_tool_call(request):
            probe = None
        try:
            response = await self._inner.handle_async_request(request)
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            # No connection was opened, so nothing was sent.
            if probe is not None:
                probe.undelivered = "unreachable"
            self._lifeline.end(f"cannot reach {self._url}: {type(exc).__name__}")
            raise
        if response.status_code == httpx2.codes.NOT_FOUND and SESSION_HEADER in request.headers:
            if probe is not None:
                probe.undelivered = "session"
            self._lifeline.lose_session()
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``https_proxy``, ``no_proxy`` …), as
    httpx would have used without a transport of ours."""
    parsed = httpx2.URL(url)
    if urllib.request.proxy_bypass(parsed.host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parsed.scheme) or proxies.get("all")


def watched_transport(url: str, lifeline: Lifeline) -> httpx2.AsyncBaseTransport:
    """An httpx transport for ``url`` that reports to ``lifeline`` and call probes."""
    return _Watch(httpx2.AsyncHTTPTransport(proxy=environment_proxy(url)), lifeline, url)
