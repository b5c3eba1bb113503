"""A gateway in front of the Telegram fake that can go down, to stage Bot API outages.

    with TelegramFake() as fake, Gateway(fake.base_url) as gateway:
        ...  # point the bot at gateway.base_url
        gateway.down("refused")   # nothing listens on the port: connection refused
        gateway.down("502")       # a reverse proxy whose upstream is gone: 502 Bad Gateway
        gateway.up()              # forwards to the fake again

Going down also cuts every open connection (a long poll in flight among them), as an
outage does. It runs on 127.0.0.1 in a thread with its own event loop, like the fake.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from contextlib import suppress
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

from tests.ports import free_port

Outage = Literal["refused", "502"]

BAD_GATEWAY_BODY = (
    b"<html><head><title>502 Bad Gateway</title></head><body>bad gateway</body></html>"
)


class Gateway:
    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="gateway", daemon=True)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.state: Literal["up"] | Outage = "up"
        self.bad_gateway = 0
        """How many requests got a 502."""
        self.port = free_port()  # kept across restarts

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Gateway:
        self._thread.start()
        self._run(self._listen())
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._run(self._close(listening=True))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def down(self, outage: Outage) -> None:
        self._run(self._go_down(outage))

    def up(self) -> None:
        self._run(self._go_up())

    def _run(self, coroutine: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(
            self._on_connection, "127.0.0.1", self.port, reuse_address=True
        )

    async def _go_down(self, outage: Outage) -> None:
        self.state = outage
        await self._close(listening=outage == "refused")

    async def _go_up(self) -> None:
        self.state = "up"
        if self._server is None:
            await self._listen()

    async def _close(self, *, listening: bool) -> None:
        if listening and self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            if self.state == "502":
                await self._bad_gateway(reader, writer)
            else:
                await self._forward(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # cut by an outage, or a peer went away
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.transport.abort()

    async def _bad_gateway(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        await reader.readexactly(length)
        self.bad_gateway += 1
        writer.write(
            b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nConnection: close\r\n"
            + f"Content-Length: {len(BAD_GATEWAY_BODY)}\r\n\r\n".encode()
            + BAD_GATEWAY_BODY
        )
        await writer.drain()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(*self._upstream)
        self._writers.add(upstream_writer)
        try:
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        finally:
            self._writers.discard(upstream_writer)
            upstream_writer.transport.abort()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with suppress(ConnectionError):
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    with suppress(ConnectionError, RuntimeError):
        writer.write_eof()
