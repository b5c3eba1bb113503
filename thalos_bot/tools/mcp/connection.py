"""One live connection to an MCP server: transport, session, handshake and tool listing.

:func:`open_connection` is an async context manager; enter and exit it in the same task
(the SDK's transports and ``ClientSession`` require it). The connection notices when the
server goes away (its message stream ends) and says so through its :class:`Lifeline`.

Over streamable HTTP it also watches the HTTP exchanges themselves (see
:mod:`thalos_bot.tools.mcp.httpwatch`): a 404 for our session id means the server has
forgotten the session (the spec then wants a new one), and a connection that could not
even be opened means the server was down; either way the request was never run.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any, Self, TextIO

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp.types import Implementation, PaginatedRequestParams, Tool

import thalos_bot
from thalos_bot.config.tools import McpServerSettings
from thalos_bot.tools.mcp.httpwatch import Lifeline, watched_transport

CLIENT_INFO = Implementation(name="thalos-bot", version=thalos_bot.__version__)
_MAX_PAGES = 100
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


class StartupTimeoutError(Exception):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"did not start within {seconds:g}s")


class Connection:
    """An initialized session and the tools the server listed."""

    def __init__(self, session: ClientSession, tools: tuple[Tool, ...], lifeline: Lifeline):
        self.session = session
        self.tools = tools
        self.lifeline = lifeline
        self.opened_at = anyio.current_time()

    @property
    def is_open(self) -> bool:
        return not self.lifeline.ended.is_set()

    def end(self, reason: str | None) -> None:
        self.lifeline.end(reason)


class _WatchedReadStream:
    """The transport's read stream, reporting its end to a :class:`Lifeline`."""

    def __init__(self, inner: Any, lifeline: Lifeline) -> None:
        self._inner = inner
        self._lifeline = lifeline

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._lifeline.end("the server closed the connection")
            raise
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def _list_tools(session: ClientSession) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _transport(
    settings: McpServerSettings,
    *,
    lifeline: Lifeline,
    stack: AsyncExitStack,
    env: Mapping[str, str],
    headers: Mapping[str, str],
    errlog: TextIO,
) -> AbstractAsyncContextManager[tuple[Any, Any]]:
    if settings.command is not None:
        params = StdioServerParameters(
            command=settings.command,
            args=list(settings.args),
            env=dict(env),
            cwd=settings.cwd,
        )
        return stdio_client(params, errlog=errlog)
    assert settings.url is not None
    client = httpx2.AsyncClient(
        headers=dict(headers),
        timeout=_HTTP_TIMEOUT,
        transport=watched_transport(settings.url, lifeline),
    )
    stack.push_async_callback(client.aclose)
    return streamable_http_client(settings.url, http_client=client)


@asynccontextmanager
async def open_connection(
    settings: McpServerSettings,
    *,
    env: Mapping[str, str],
    headers: Mapping[str, str],
    errlog: TextIO,
    startup_timeout: float,
) -> AsyncIterator[Connection]:
    """Start or reach the server, shake hands and list its tools within ``startup_timeout``.

    Raises :class:`StartupTimeoutError` when that takes too long; any other start-up
    failure propagates as raised by the SDK.
    """
    lifeline = Lifeline()
    with anyio.CancelScope(deadline=anyio.current_time() + startup_timeout) as deadline:
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(
                _transport(
                    settings,
                    lifeline=lifeline,
                    stack=stack,
                    env=env,
                    headers=headers,
                    errlog=errlog,
                )
            )
            session = await stack.enter_async_context(
                ClientSession(_WatchedReadStream(read, lifeline), write, client_info=CLIENT_INFO)
            )
            await session.initialize()
            tools = await _list_tools(session)
            deadline.deadline = math.inf
            yield Connection(session, tuple(tools), lifeline)
    if deadline.cancelled_caught:
        raise StartupTimeoutError(startup_timeout)
