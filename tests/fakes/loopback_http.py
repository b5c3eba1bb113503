"""The HTTP/1.1 plumbing the streamed-API fakes share, for tests.

:class:`LoopbackServer` is a tiny server on ``127.0.0.1`` (ephemeral port) running its own
event loop in a background thread, so a test can use it whatever loop it runs on. A
subclass answers each request in :meth:`LoopbackServer._respond` and keeps its own
failure bookkeeping (:meth:`LoopbackServer._record_failure`,
:meth:`LoopbackServer._exit_failures`); ``__exit__`` fails the test with them.

:func:`play` writes the steps of a streamed reply (chunks, :class:`Pause`, :class:`Drop`,
:class:`Hang`) and counts a hung reply's client leaving in
:attr:`LoopbackServer.hangups`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self

import anyio.to_thread


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A plain stdlib ``handler`` served on loopback from a thread; its base URL (no
    trailing slash) while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One HTTP request as a fake received it."""

    method: str
    path: str
    headers: Mapping[str, str]
    """Header names in lower case."""
    body: Any
    """The parsed JSON body (``None`` when there was none)."""
    size: int = 0
    """The body's length in bytes, as sent."""

    @property
    def last_user_text(self) -> str:
        """The text blocks of the last user message, joined (``""`` when none)."""
        messages = self.body.get("messages", []) if isinstance(self.body, dict) else []
        for message in reversed(messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(b.get("text", "") for b in content if b.get("type") == "text")
        return ""


@dataclass(frozen=True, slots=True)
class Pause:
    seconds: float


@dataclass(frozen=True, slots=True)
class Drop:
    """Close the TCP connection without finishing the response."""


@dataclass(frozen=True, slots=True)
class Hang:
    """Send nothing more until the client closes the connection."""


def chunk(payload: bytes) -> bytes:
    """One chunk of a ``transfer-encoding: chunked`` body."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def head(status: int, headers: Sequence[tuple[str, str]]) -> bytes:
    """A response's status line and headers."""
    lines = [f"HTTP/1.1 {status} Fake", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
    """The next request on the connection; ``None`` when the client closed it."""
    try:
        raw_head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    request_line, *header_lines = raw_head.decode("latin-1").split("\r\n")
    method, path, _version = request_line.split(" ", 2)
    headers: dict[str, str] = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", ""):
        raise ValueError("AnthropicFake does not read chunked request bodies")
    raw = await reader.readexactly(int(headers.get("content-length", "0")))
    body = json.loads(raw) if raw else None
    return RecordedRequest(method, path, headers, body, len(raw))


async def json_response(
    writer: asyncio.StreamWriter,
    status: int,
    payload: Any,
    extra: Sequence[tuple[str, str]] = (),
) -> bool:
    """Write a complete JSON response; True (the connection stays open)."""
    body = json.dumps(payload).encode()
    headers = [
        ("content-type", "application/json"),
        ("content-length", str(len(body))),
        *extra,
    ]
    writer.write(head(status, headers) + body)
    await writer.drain()
    return True


class LoopbackServer:
    """A fake's server on its own loop and thread. Use as a context manager."""

    name: ClassVar[str] = "LoopbackServer"
    """Names the thread and starts every failure message."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._hangups = 0
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._port = 0

    # -- what a subclass provides --

    async def _respond(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; False when the connection must close."""
        raise NotImplementedError

    def _record_failure(self, failure: str) -> None:
        """Note a failure (called with the lock held)."""
        raise NotImplementedError

    def _exit_failures(self) -> list[str]:
        """The failures that fail the test on ``__exit__``."""
        raise NotImplementedError

    # -- public API --

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def hangups(self) -> int:
        """How many hung replies saw their client close the connection (also when it
        closed before the events ahead of the hang were all written)."""
        with self._lock:
            return self._hangups

    async def wait_for_hangup(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Wait until ``hangups >= count``; False if ``timeout`` passed first."""

        def wait() -> bool:
            with self._lock:
                return self._lock.wait_for(lambda: self._hangups >= count, timeout)

        return await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)

    def __enter__(self) -> Self:
        thread_name = self.name.removesuffix("Fake").lower() + "-fake"
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._thread.start()
        ready = self._ready.wait(10)
        if self._startup_error is not None:
            raise RuntimeError(f"{self.name} failed to start") from self._startup_error
        if not ready:
            raise RuntimeError(f"{self.name} failed to start")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._loop = None
        if self._thread is not None:
            self._thread.join(10)
        failures = self._exit_failures()
        if exc_type is None and failures:
            raise AssertionError(f"{self.name}: " + "; ".join(failures))

    # -- internals --

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as err:  # surfaced to __enter__ when startup fails
            self._startup_error = err
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self._port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            # A client that connected just before the fake stops (a reachability probe
            # that closed at once) is still being accepted: let its handler see the
            # close and shut its socket, or the socket leaks unclosed (a ResourceWarning
            # in whichever test runs at the next garbage collection).
            await asyncio.sleep(0.02)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while (request := await read_request(reader)) is not None:
                if not await self._respond(request, reader, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client went away, or the fake is shutting down
        except Exception as err:
            with self._lock:
                self._record_failure(f"the fake itself failed: {err!r}")
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _play(
        self,
        writer: asyncio.StreamWriter,
        reader: asyncio.StreamReader,
        steps: Sequence[object],
        encode: Callable[[Any], bytes],
    ) -> bool:
        """Write a chunked body of ``steps`` (the status line and headers already
        written): ``encode`` turns any other step into a chunk's payload. False when
        the connection must close."""
        try:
            for step in steps:
                if isinstance(step, Pause):
                    await writer.drain()
                    await asyncio.sleep(step.seconds)
                elif isinstance(step, Drop):
                    await writer.drain()
                    return False
                elif isinstance(step, Hang):
                    await writer.drain()
                    await self._wait_until_gone(reader)
                    return False
                else:
                    writer.write(chunk(encode(step)))
        except ConnectionError:
            # The client may leave before the steps ahead of a Hang are all written
            # (it stops at the first event): a hung reply saw its client leave all the same.
            if any(isinstance(step, Hang) for step in steps):
                self._count_hangup()
            raise
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _wait_until_gone(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(ConnectionError):
            while await reader.read(65536):
                pass
        self._count_hangup()

    def _count_hangup(self) -> None:
        with self._lock:
            self._hangups += 1
            self._lock.notify_all()
