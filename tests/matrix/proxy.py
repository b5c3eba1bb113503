"""A loopback HTTP proxy between the bot and the real Synapse, for faults Synapse itself
never makes: a send carried out whose answer is lost (the connection drops after the
homeserver took the request), held back until the bot is killed, or answered with the
homeserver's own 429 (``M_LIMIT_EXCEEDED``) and a wait longer than a test's own override
of Synapse's rate limit can make (its admin API takes whole messages a second).

It also keeps count, as a strict fake would, of sends made while the wait of a 429 that
passed through was still running. Everything else passes through unchanged, one request
at a time per connection (HTTP/1.1 keep-alive, bodies by Content-Length, as httpx sends
them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from time import monotonic

import anyio
import httpx2
from anyio.abc import SocketStream, TaskGroup

SEND = "/send/m.room.message/"
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


@dataclass
class Request:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes


Rule = Callable[[Request], bool]


@dataclass
class Proxy:
    upstream: str
    port: int = 0
    drop: list[Rule] = field(default_factory=list)
    """Requests forwarded whose answer is then dropped with the connection (once each)."""
    refuse: list[Rule] = field(default_factory=list)
    """Requests answered 502 by the proxy, never passed on (once each)."""
    limit: list[Rule] = field(default_factory=list)
    """Requests answered 429 ``M_LIMIT_EXCEEDED`` (``limit_ms``) by the proxy, as Synapse
    answers them, never passed on (once each)."""
    limit_ms: int = 10_000
    hold: list[Rule] = field(default_factory=list)
    """Requests forwarded whose answer is never given (the connection stays open)."""
    holding: Rule | None = None
    """Like ``hold``, for every request that matches, until set back to None."""
    dropped: list[Request] = field(default_factory=list)
    held: list[Request] = field(default_factory=list)
    changed: anyio.Event = field(default_factory=anyio.Event)
    blocked_until: float = 0.0
    """Until when the last 429 that passed said to wait (stamped as it passed)."""
    violations: int = 0
    """Sends that arrived while a 429's wait was still running."""
    limited: int = 0
    """Answers with a 429 that passed."""
    _client: httpx2.AsyncClient | None = None
    _listener: anyio.abc.Listener[SocketStream] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def run(self, group: TaskGroup) -> None:
        self._client = httpx2.AsyncClient(base_url=self.upstream, timeout=120.0)
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        self._listener = listener
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        group.start_soon(listener.serve, self._connection)

    async def aclose(self) -> None:
        if self._listener is not None:
            await self._listener.aclose()
        if self._client is not None:
            await self._client.aclose()

    def _note(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def _connection(self, stream: SocketStream) -> None:
        buffer = b""
        async with stream:
            while True:
                try:
                    request, buffer = await _read(stream, buffer)
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    return
                if any_send(request) and monotonic() < self.blocked_until:
                    self.violations += 1
                if _take(self.refuse, request):
                    self._note()
                    gateway = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"
                    with suppress(anyio.BrokenResourceError, OSError):
                        await stream.send(gateway)
                    continue
                if _take(self.limit, request):
                    self._note()
                    answer = _limited(self.limit_ms)
                else:
                    answer = await self._forward(request)
                if answer.status_code == 429:
                    wait = answer.json().get("retry_after_ms", 0) / 1000
                    self.blocked_until = max(self.blocked_until, monotonic() + wait)
                    self.limited += 1
                if _take(self.drop, request):
                    self.dropped.append(request)
                    self._note()
                    return  # closing the connection loses the answer
                if _take(self.hold, request) or (self.holding and self.holding(request)):
                    self.held.append(request)
                    self._note()
                    await anyio.sleep_forever()
                head = [f"HTTP/1.1 {answer.status_code} {answer.reason_phrase}"]
                head += [f"{k}: {v}" for k, v in answer.headers.items() if k.lower() not in HOP]
                head.append(f"Content-Length: {len(answer.content)}")
                with suppress(anyio.BrokenResourceError, OSError):
                    await stream.send(("\r\n".join(head) + "\r\n\r\n").encode() + answer.content)

    async def _forward(self, request: Request) -> httpx2.Response:
        assert self._client is not None
        headers = [(k, v) for k, v in request.headers if k.lower() not in HOP | {"host"}]
        return await self._client.request(
            request.method, request.path, headers=headers, content=request.body
        )


@asynccontextmanager
async def fronting(upstream: str) -> AsyncIterator[Proxy]:
    """A proxy in front of ``upstream``, serving until the block ends."""
    proxy = Proxy(upstream)
    try:
        async with anyio.create_task_group() as group:
            await proxy.run(group)
            try:
                yield proxy
            finally:
                group.cancel_scope.cancel()
    finally:
        await proxy.aclose()


def _limited(wait_ms: int) -> httpx2.Response:
    """Synapse's answer past a rate limit (its ``Retry-After`` header too)."""
    body = {"errcode": "M_LIMIT_EXCEEDED", "error": "Too Many Requests", "retry_after_ms": wait_ms}
    headers = {"Retry-After": str(-(-wait_ms // 1000))}
    return httpx2.Response(429, json=body, headers=headers)


def _take(rules: list[Rule], request: Request) -> bool:
    for rule in rules:
        if rule(request):
            rules.remove(rule)
            return True
    return False


async def _read(stream: SocketStream, buffer: bytes) -> tuple[Request, bytes]:
    while b"\r\n\r\n" not in buffer:
        buffer += await stream.receive()
    head, buffer = buffer.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    headers = [tuple(line.split(": ", 1)) for line in lines[1:] if ": " in line]
    pairs = [(k, v) for k, v in headers]
    length = next((int(v) for k, v in pairs if k.lower() == "content-length"), 0)
    while len(buffer) < length:
        buffer += await stream.receive()
    return Request(method, path, pairs, buffer[:length]), buffer[length:]


def sends_of(text: str) -> Rule:
    """A send (message or edit) that shows ``text`` as its final content."""

    def rule(request: Request) -> bool:
        return request.method == "PUT" and SEND in request.path and text.encode() in request.body

    return rule


def any_send(request: Request) -> bool:
    return request.method == "PUT" and SEND in request.path
