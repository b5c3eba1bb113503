"""A streamable-HTTP server that restarts, or is down, under a live connection.

The test server is the real ``mcp`` SDK server (``streamable_http_app`` under uvicorn)
in a subprocess, stopped and started again on the same port. A restarted server has
forgotten our session and answers its id with 404: the client must open a new session
(the spec's session management rule) and send the call again, since the server never
ran it; a call the server was running when it went away is never sent again.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.client.streamable_http import MAX_RECONNECTION_ATTEMPTS
from structlog.testing import capture_logs

from tests.tools.conftest import LIMITS, TEST_SERVER, context, read_record, tool_call
from thalos_bot.config.tools import McpServerSettings
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.mcp import McpServers
from thalos_bot.tools.mcp.supervisor import McpServerSource

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class RestartableServer:
    """The test server over HTTP; :meth:`restart` brings it back on the same port."""

    def __init__(self, record: Path, *flags: str) -> None:
        self._record = record
        self._flags = flags
        self.port = 0
        self._process: Process | None = None
        self._stdout: BufferedByteReceiveStream | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        process = await self._spawn()
        await self._bind(process)

    async def _spawn(self) -> Process:
        process = await anyio.open_process(
            [sys.executable, str(TEST_SERVER), "http", str(self.port), "wait", *self._flags],
            env={"MCP_TEST_RECORD": str(self._record), "PATH": "/usr/bin:/bin"},
            stderr=subprocess.DEVNULL,
        )
        assert process.stdout is not None
        self._process, self._stdout = process, BufferedByteReceiveStream(process.stdout)
        assert await self.line() == "LOADED"
        return process

    async def _bind(self, process: Process) -> None:
        assert process.stdin is not None
        await process.stdin.send(b"go\n")
        label, port = (await self.line()).split()
        assert label == "PORT"
        self.port = int(port)

    async def line(self) -> str:
        assert self._stdout is not None
        with anyio.fail_after(30):
            return (await self._stdout.receive_until(b"\n", 4096)).decode()

    async def seen(self, line: str, times: int = 1) -> None:
        """Until this process has printed ``line`` (``OPENED``, ``NO-GET``) ``times``."""
        while times:
            times -= await self.line() == line

    async def stop(self) -> None:
        await self._end(self._process)
        self._process = None

    async def restart(self) -> None:
        """Stop, and be serving again on the same port a moment later (the new process
        has loaded everything before the old one goes)."""
        old = self._process
        new = await self._spawn()
        await self._end(old)
        await self._bind(new)

    @staticmethod
    async def _end(process: Process | None) -> None:
        if process is not None and process.returncode is None:
            process.terminate()
            await process.wait()
        if process is not None:
            await process.aclose()


@pytest.fixture
async def server(record: Path) -> AsyncIterator[RestartableServer]:
    """The server without a standalone GET stream: nothing tells an idle client of a
    restart, so the next call is the first to meet the forgotten session."""
    running = RestartableServer(record, "no-get")
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


def _web(url: str) -> McpServerSettings:
    return McpServerSettings(name="web", url=url)


def _calls(record: Path, text: str) -> int:
    return sum(1 for r in read_record(record) if r.get("text") == text)


async def test_a_restarted_server_is_reconnected_and_the_call_sent_once(
    server: RestartableServer, record: Path
) -> None:
    async with McpServers.start([_web(server.url)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        first = await catalog.call(tool_call("web__echo", text="before"), context())
        await server.seen("NO-GET", MAX_RECONNECTION_ATTEMPTS)  # the SDK gave up on GET
        await server.restart()
        assert servers.sources[0].status().state == "ready", "nothing told it yet"
        with capture_logs() as logs:
            after = await catalog.call(tool_call("web__echo", text="after"), context())
            later = await catalog.call(tool_call("web__echo", text="later"), context())
        status = servers.sources[0].status()
    assert (first.content, first.outcome) == ("before", "ok")
    assert (after.content, after.outcome) == ("after", "ok")
    assert (later.content, later.outcome) == ("later", "ok")
    assert status.state == "ready"
    assert _calls(record, "after") == 1
    events = [e for e in logs if e["event"] == "mcp-call-not-delivered"]
    assert [(e["tool"], e["why"]) for e in events] == [("echo", "session")]
    down = [e for e in logs if e["event"] == "mcp-server-down"]
    assert [e["reason"] for e in down] == [
        "the server no longer knows this session (it may have restarted)"
    ]


async def test_a_call_cut_off_by_the_restart_is_not_sent_again(
    server: RestartableServer, record: Path
) -> None:
    async with McpServers.start([_web(server.url)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        results = []

        async def slow() -> None:
            slow_call = tool_call("web__slow", seconds=60, tag="cut", meet="cut")
            results.append(await catalog.call(slow_call, context()))

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            met = await catalog.call(tool_call("web__rendezvous", group="cut", size=2), context())
            assert met.content == "met"
            await server.restart()
        again = await catalog.call(tool_call("web__echo", text="next"), context())
    [cut] = results
    assert cut.outcome == "error"
    assert "went away during the call to 'slow'" in cut.content
    started = [
        r for r in read_record(record) if r == {"event": "start", "tool": "slow", "tag": "cut"}
    ]
    assert len(started) == 1, "the interrupted call must not run twice"
    assert (again.content, again.outcome) == ("next", "ok")


async def test_a_server_down_when_the_call_begins_is_reported_as_unreachable(
    server: RestartableServer,
) -> None:
    async with McpServers.start([_web(server.url)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        assert (await catalog.call(tool_call("web__echo", text="up"), context())).outcome == "ok"
        await server.stop()
        down = await catalog.call(tool_call("web__echo", text="down"), context())
        status = servers.sources[0].status()
    assert down.outcome == "error"
    assert "went away" not in down.content
    assert down.content.startswith(
        f"The tool server 'web' is unavailable: cannot reach {server.url}: ConnectError"
    )
    assert status.state == "unavailable"
    assert status.reason == f"cannot reach {server.url}: ConnectError"


async def test_a_session_forgotten_while_idle_is_replaced_at_once(record: Path) -> None:
    # With the standalone GET stream the SDK keeps open, the restart is seen while idle.
    server = RestartableServer(record)
    await server.start()
    try:
        async with McpServers.start([_web(server.url)], LIMITS) as servers:
            source = servers.sources[0]
            await server.restart()
            await server.seen("OPENED")  # our client opened a new session unasked
            await _settled(source)
            status = source.status()
            catalog = SourceCatalog(servers.sources)
            with capture_logs() as logs:
                echoed = await catalog.call(tool_call("web__echo", text="idle"), context())
    finally:
        await server.stop()
    assert status.state == "ready"
    assert (echoed.content, echoed.outcome) == ("idle", "ok")
    assert not [e for e in logs if e["event"].startswith("mcp-call-not-delivered")]


async def _settled(source: McpServerSource) -> None:
    """Until the connection attempt in progress has succeeded or failed."""
    if source.status().state != "ready":
        with anyio.fail_after(30):
            await source.begin_attempt().wait()
