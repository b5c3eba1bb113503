"""The catalog over streamable HTTP, against the test server on loopback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from tests.tools.conftest import (
    LIMITS,
    TEST_SERVER,
    agent,
    cancel_once_running,
    context,
    read_record,
    tool_call,
)
from thalos_bot.config.tools import McpServerSettings
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.mcp import McpServers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _port_of(process: Process) -> int:
    assert process.stdout is not None
    seen = ""
    with anyio.fail_after(30):
        async for chunk in TextReceiveStream(process.stdout):
            seen += chunk
            if "\n" in seen:
                break
    label, port = seen.split("\n", 1)[0].split()
    assert label == "PORT"
    return int(port)


@pytest.fixture
async def http_process(record: Path) -> AsyncIterator[tuple[Process, str]]:
    """The test server serving streamable HTTP on 127.0.0.1, and its endpoint URL."""
    process = await anyio.open_process(
        [sys.executable, str(TEST_SERVER), "http"],
        env={"MCP_TEST_RECORD": str(record), "PATH": "/usr/bin:/bin"},
        stderr=subprocess.DEVNULL,
    )
    async with process:
        try:
            port = await _port_of(process)
            yield process, f"http://127.0.0.1:{port}/mcp"
        finally:
            if process.returncode is None:
                process.terminate()
            await process.wait()


def _web(url: str, **extra: object) -> McpServerSettings:
    return McpServerSettings.model_validate({"name": "web", "url": url, **extra})


async def test_lists_and_calls_over_http(http_process: tuple[Process, str], record: Path) -> None:
    _, url = http_process
    server = _web(url, headers={"X-Api-Key": "${THALOS_TEST_KEY}"})
    async with McpServers.start([server], LIMITS, environ={"THALOS_TEST_KEY": "k-123"}) as servers:
        catalog = SourceCatalog(servers.sources)
        names = [spec.name for spec in catalog.specs_for(agent())]
        echoed = await catalog.call(tool_call("web__echo", text="over http"), context())
        header = await catalog.call(tool_call("web__header", name="X-Api-Key"), context())
        failed = await catalog.call(tool_call("web__fail", message="nope"), context())
    assert "web__echo" in names
    assert "web__say_hello" in names
    assert (echoed.content, echoed.outcome) == ("over http", "ok")
    assert header.content == "k-123"
    assert (failed.content, failed.outcome) == ("nope", "error")
    assert {"event": "call", "tool": "echo", "text": "over http"} in read_record(record)


async def test_concurrent_calls_over_http(http_process: tuple[Process, str]) -> None:
    _, url = http_process
    answers: list[str] = []
    async with McpServers.start([_web(url)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)

        async def meet() -> None:
            result = await catalog.call(tool_call("web__rendezvous", group="h", size=3), context())
            answers.append(result.content)

        with anyio.fail_after(15):
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(meet)
    assert answers == ["met"] * 3


async def test_cancellation_and_timeout_over_http(
    http_process: tuple[Process, str], record: Path
) -> None:
    _, url = http_process
    async with McpServers.start([_web(url, timeout=1)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        with anyio.fail_after(15):
            timed_out = await catalog.call(tool_call("web__slow", seconds=60, tag="t"), context())
        await cancel_once_running(catalog, "web", "c")  # a day's call, interrupted
        with anyio.fail_after(5):
            after = await catalog.call(tool_call("web__echo", text="after"), context())
    assert "did not finish within 1s" in timed_out.content
    assert (after.content, after.outcome) == ("after", "ok")
    slow = [(e["event"], e["tag"]) for e in read_record(record) if e["tool"] == "slow"]
    assert ("cancelled", "c") in slow
    assert ("end", "c") not in slow


async def test_a_vanished_http_server_gives_error_results(
    http_process: tuple[Process, str],
) -> None:
    process, url = http_process
    async with McpServers.start([_web(url)], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        assert (await catalog.call(tool_call("web__echo", text="up"), context())).outcome == "ok"
        process.terminate()
        await process.wait()
        with anyio.fail_after(10):
            gone = await catalog.call(tool_call("web__echo", text="down"), context())
            again = await catalog.call(tool_call("web__echo", text="down"), context())
        status = servers.sources[0].status()
    assert gone.outcome == again.outcome == "error"
    assert status.state == "unavailable"
    assert "cannot reach http://127.0.0.1:" in status.reason
