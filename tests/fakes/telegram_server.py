"""The Telegram fake's HTTP server: a thread with its own event loop, on 127.0.0.1.

Hosting the server on its own loop lets any test use it, sync or async, whatever
loop the test runs on. The handler decides each request's `Outcome`: answer it,
hold it unanswered until the client gives up and closes the connection (or the
server stops), or close the connection without an answer. `refuse_connections` stops
listening for a while (every connection is closed, and new ones are refused, as when
the server is down), then listens again on the same port.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, Self

from tests.fakes.telegram_http import (
    MAX_HEAD,
    BadHttpRequestError,
    HttpRequest,
    encode_raw_response,
    encode_response,
    read_request,
)
from tests.fakes.telegram_wire import Json, bad_request


@dataclass(frozen=True)
class Outcome:
    action: Literal["answer", "hold", "close"]
    status: int = 200
    payload: Json | None = None
    raw: bytes | None = None
    """A body sent as it is instead of ``payload`` (a file download's bytes)."""
    raw_type: str = "application/octet-stream"
    """The Content-Type of ``raw``."""


Handler = Callable[[HttpRequest], Awaitable[Outcome]]


class ServerThread:
    def __init__(self, handler: Handler, on_closed: Callable[[], None] = lambda: None) -> None:
        self._handler = handler
        self._on_closed = on_closed
        """Called (on the server's loop) each time a client's connection has ended."""
        self.accepted = 0
        """Connections accepted so far."""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._reopen_error: OSError | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Server | None = None
        self._reopening: set[asyncio.Task[None]] = set()
        self.port = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="telegram-fake", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=10) or self._error is not None:
            raise RuntimeError("the Telegram fake did not start") from self._error

    def stop(self) -> None:
        stopping = self._stopping
        if stopping is not None:
            self.call_soon(stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self._reopen_error is not None:
            error, self._reopen_error = self._reopen_error, None
            raise RuntimeError(
                f"the Telegram fake could not listen on port {self.port} again"
            ) from error

    @property
    def open_connections(self) -> int:
        """Client connections still open (a client that closes its own ends them)."""
        return len(self._connections)

    def call_soon(self, callback: Callable[[], object]) -> None:
        """Run callback on the server's loop, from any thread; a no-op once it stopped."""
        if self._loop is not None:
            with suppress(RuntimeError):  # the loop is closed
                self._loop.call_soon_threadsafe(callback)

    def refuse_connections(self, seconds: float) -> None:
        """Close every connection and refuse new ones for ``seconds``; returns once the
        port no longer listens. Callable from any thread but the server's."""
        loop = self._loop
        if loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._refuse(seconds), loop).result(timeout=10)

    async def _refuse(self, seconds: float) -> None:
        listener, self._listener = self._listener, None
        if listener is None:
            return  # already refusing
        listener.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        reopen = asyncio.get_running_loop().create_task(self._listen_again(seconds))
        self._reopening.add(reopen)
        reopen.add_done_callback(self._reopening.discard)

    async def _listen_again(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        if self._stopping is None or self._stopping.is_set():
            return
        # The port is free again at once: the listener sets SO_REUSEADDR (asyncio's
        # default), so connections it accepted, even in TIME_WAIT, do not hold it.
        try:
            self._listener = await self._listen(self.port)
        except OSError as error:  # nothing listens from now on: stop() says why
            self._reopen_error = error

    async def _listen(self, port: int) -> asyncio.Server:
        return await asyncio.start_server(self._on_connection, "127.0.0.1", port, limit=MAX_HEAD)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve_forever())
        except BaseException as error:  # reported by start(); a thread must not die loudly
            self._error = error
            self._ready.set()

    async def _serve_forever(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._listener = await self._listen(0)
        self.port = self._listener.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            for reopen in list(self._reopening):
                reopen.cancel()
            listener, self._listener = self._listener, None
            if listener is not None:
                listener.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, *self._reopening, return_exceptions=True)
            if listener is not None:
                await listener.wait_closed()

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self.accepted += 1
        try:
            while True:
                try:
                    request = await read_request(reader)
                except BadHttpRequestError as error:
                    body = bad_request(str(error)).to_json()
                    writer.write(encode_response(400, body, keep_alive=False))
                    break
                if request is None:
                    break
                outcome = await self._handler(request)
                if outcome.action == "hold":
                    while await reader.read(65536):
                        pass  # until the client gives up and closes
                if outcome.action == "answer" and outcome.raw is not None:
                    writer.write(
                        encode_raw_response(
                            outcome.status,
                            outcome.raw,
                            keep_alive=request.keep_alive,
                            content_type=outcome.raw_type,
                        )
                    )
                    await writer.drain()
                    continue
                if outcome.action != "answer" or outcome.payload is None:
                    break
                writer.write(
                    encode_response(outcome.status, outcome.payload, keep_alive=request.keep_alive)
                )
                await writer.drain()
                if not request.keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        except asyncio.CancelledError:
            # The fake is stopping. Returning (rather than re-raising) keeps asyncio's
            # stream callback from logging a spurious "Exception in callback".
            pass
        finally:
            self._connections.discard(task)
            self._on_closed()
            writer.close()
            with suppress(ConnectionError):
                await writer.wait_closed()


class ServedFake:
    """A fake whose HTTP server is a :class:`ServerThread` over its ``_serve``: started
    by ``with``, stopped at its end, at a ``base_url`` ending in ``/v1`` (OpenAI's shape)."""

    def __init__(self) -> None:
        self._server = ServerThread(self._serve)

    async def _serve(self, request: HttpRequest) -> Outcome:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._server.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}/v1"
