"""A listener's bounds: how long a connection may take to send its headers, how many
connections may be open at once, and how much a flood of them may write to the log.
Every HTTP listener the daemon opens (the web page, Telegram's webhook receiver) is
served with them (:mod:`.server`).

uvicorn has neither a header timeout nor a cap on open connections (its
``limit_concurrency`` answers 503 only once a request has arrived, so idle connections
still hold descriptors). The protocol :func:`bounded_protocol` makes is uvicorn's own
h11 protocol with both added:

* From when a connection opens, or a new request's first bytes arrive, its headers
  must be complete within ``header_timeout``; else the connection is dropped. A request
  being answered (an event stream included) is not timed.
* At most ``cap`` connections are open, kept to a third of the descriptors the
  process has free so that a flood of them never leaves the daemon without descriptors
  for its database, its platforms and its tools. asyncio accepts up to ``backlog``
  connections at each wake-up, and a dropped one holds its descriptor for a few more
  turns of the loop, so ``backlog`` is kept to a quarter of the cap (the kernel's
  queue of connections not yet accepted stays long: :data:`.server.LISTEN_QUEUE`,
  else a burst of connections fills it and a browser's connect waits out a
  resent SYN, a second or more). At the cap, the
  oldest connection still waiting for its headers makes way for the new one (a
  browser sends its headers at once, so it is a stalled client that goes); with none
  waiting, the new one is dropped.
* Nothing is logged per connection: what was shed is counted and logged at most once a
  minute; uvicorn's own warnings (one per malformed request) and asyncio's "out of
  descriptors" (one per refused accept) are held to a few a minute.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path

import h11
import structlog
from uvicorn.protocols.http.h11_impl import H11Protocol

log = structlog.get_logger(__name__)

LOG_EVERY = 60.0
"""Seconds between two log lines about shed connections (or uvicorn's warnings)."""
UVICORN_WARNINGS = 5
"""uvicorn warnings let through per :data:`LOG_EVERY`."""
MIN_CONNECTIONS = 8
RESERVE = 64
"""Descriptors kept free for what the daemon opens after the page starts (files,
platform connections, tool processes)."""
MAX_BACKLOG = 128
OUT_OF_DESCRIPTORS = "socket.accept() out of system resource"


def _in_use() -> int:
    try:
        return sum(1 for _ in Path("/proc/self/fd").iterdir())
    except OSError:
        return RESERVE  # not Linux: assume as many again are open


def budget(wanted: int) -> tuple[int, int]:
    """The connection cap (``wanted`` at most) and the accept backlog, from the
    descriptors this process has free."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        cap = wanted
    else:
        cap = max(MIN_CONNECTIONS, min(wanted, (soft - _in_use() - RESERVE) // 3))
    return cap, max(MIN_CONNECTIONS // 2, min(MAX_BACKLOG, cap // 4))


@dataclass
class Shed:
    """Connections dropped (at the cap, or slow with their headers), logged in sums."""

    at_cap: int = 0
    slow: int = 0
    event: str = "web_connections_shed"
    """The log line's event: whose connections they were."""
    logged_at: float = field(default=-LOG_EVERY)

    def note(self, *, slow: bool) -> None:
        if slow:
            self.slow += 1
        else:
            self.at_cap += 1
        now = time.monotonic()
        if now - self.logged_at >= LOG_EVERY:
            log.warning(self.event, at_cap=self.at_cap, slow_headers=self.slow)
            self.logged_at, self.at_cap, self.slow = now, 0, 0


class _Connections:
    def __init__(self, cap: int, name: str) -> None:
        self.cap = cap
        self.open = 0
        self.waiting: dict[H11Protocol, None] = {}
        """Connections whose headers are still due, oldest first."""
        self.shed = Shed(event=f"{name}_connections_shed")


def bounded_protocol(header_timeout: float, cap: int, name: str = "web") -> type[H11Protocol]:
    """uvicorn's h11 protocol with a header timeout and a connection cap (for
    ``uvicorn.Config(http=...)``); one per listener, which counts its connections and
    logs what it sheds as ``<name>_connections_shed``."""
    connections = _Connections(cap, name)

    class Bounded(H11Protocol):
        _refused = False
        _counted = False
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if connections.open >= connections.cap and not _make_way():
                self._refused = True
                transport.abort()
                connections.shed.note(slow=False)
                return
            self._counted = True
            connections.open += 1
            super().connection_made(transport)
            self._await_headers()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self._await_headers()  # a request begun, its headers not all here yet
            else:
                self._headers_in()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return  # never handed to uvicorn
            self._uncount()
            super().connection_lost(exc)

        def _await_headers(self) -> None:
            if self._timer is None:
                self._timer = self.loop.call_later(header_timeout, self._too_slow)
                connections.waiting[self] = None

        def _headers_in(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            connections.waiting.pop(self, None)

        def _uncount(self) -> None:
            self._headers_in()
            if self._counted:
                self._counted = False
                connections.open -= 1

        def _too_slow(self) -> None:
            self._timer = None
            if self.conn.their_state is h11.IDLE:
                self.drop(slow=True)

        def drop(self, *, slow: bool) -> None:
            self._uncount()
            connections.shed.note(slow=slow)
            self.transport.abort()

    def _make_way() -> bool:
        for oldest in connections.waiting:
            assert isinstance(oldest, Bounded)
            oldest.drop(slow=False)
            return True
        return False

    return Bounded


class _FewPerMinute(logging.Filter):
    """At most :data:`UVICORN_WARNINGS` records per :data:`LOG_EVERY` seconds of those
    whose message starts with ``prefix`` and, with ``below``, whose level is under it;
    others all pass (an application error uvicorn logs is never held back)."""

    def __init__(self, prefix: str = "", below: int = logging.CRITICAL + 1) -> None:
        super().__init__()
        self._prefix = prefix
        self._below = below
        self._window = -LOG_EVERY
        self._passed = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= self._below or not record.getMessage().startswith(self._prefix):
            return True
        now = time.monotonic()
        if now - self._window >= LOG_EVERY:
            self._window, self._passed = now, 0
        self._passed += 1
        return self._passed <= UVICORN_WARNINGS


def quiet_floods() -> None:
    """Hold uvicorn's per-request warnings (a malformed request each) and asyncio's
    per-accept "out of descriptors" errors to a few a minute each."""
    held = {
        "uvicorn.error": _FewPerMinute(below=logging.ERROR),
        "asyncio": _FewPerMinute(OUT_OF_DESCRIPTORS),
    }
    for name, few in held.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _FewPerMinute) for f in logger.filters):
            logger.addFilter(few)
