"""How long a cancelled MCP tool call takes to give its caller back, over stdio and HTTP.

    python bench/mcp_cancel.py [--runs 20]

The test MCP server (tests/tools/mcp_test_server.py) runs a ``slow`` call that would
take a day; as soon as it runs, the caller is cancelled. Printed per transport: the
time from the cancel to the caller's return, p50 and the worst of ``--runs``, against
an ``echo`` round trip on the same server as the baseline. (The tests show that the
cancel interrupts the call and reaches the server; this is the figure they used to
assert.)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog
from anyio.streams.text import TextReceiveStream

from tests.tools.conftest import LIMITS, TEST_SERVER, UNENDING, context, stdio_server, tool_call
from thalos_bot.config.tools import McpServerSettings
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.mcp import McpServers


async def cancel_ms(catalog: SourceCatalog, server: str, group: str) -> float:
    caller = anyio.CancelScope()
    returned = 0.0

    async def slow() -> None:
        nonlocal returned
        with caller:
            await catalog.call(
                tool_call(f"{server}__slow", seconds=UNENDING, tag=group, meet=group), context()
            )
        returned = time.perf_counter()

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        await catalog.call(tool_call(f"{server}__rendezvous", group=group, size=2), context())
        cancelled = time.perf_counter()
        caller.cancel()
    return (returned - cancelled) * 1000


async def echo_ms(catalog: SourceCatalog, server: str) -> float:
    start = time.perf_counter()
    await catalog.call(tool_call(f"{server}__echo", text="x"), context())
    return (time.perf_counter() - start) * 1000


@asynccontextmanager
async def http_server() -> AsyncIterator[McpServerSettings]:
    process = await anyio.open_process(
        [sys.executable, str(TEST_SERVER), "http"], stderr=subprocess.DEVNULL
    )
    async with process:
        try:
            assert process.stdout is not None
            seen = ""
            async for chunk in TextReceiveStream(process.stdout):
                seen += chunk
                if "\n" in seen:
                    break
            port = int(seen.split("\n", 1)[0].split()[1])
            yield McpServerSettings.model_validate(
                {"name": "web", "url": f"http://127.0.0.1:{port}/mcp"}
            )
        finally:
            process.terminate()
            await process.wait()


async def measure(settings: McpServerSettings, runs: int) -> tuple[list[float], list[float]]:
    async with McpServers.start([settings], LIMITS) as servers:
        catalog = SourceCatalog(servers.sources)
        await echo_ms(catalog, settings.name)  # warm up
        cancels = [await cancel_ms(catalog, settings.name, f"g{i}") for i in range(runs)]
        echoes = [await echo_ms(catalog, settings.name) for _ in range(runs)]
    return cancels, echoes


def line(name: str, ms: list[float]) -> str:
    return f"{name:<28} p50 {statistics.median(ms):8.2f} ms   max {max(ms):8.2f} ms"


async def main(runs: int) -> None:
    stdio = await measure(stdio_server("test"), runs)
    async with http_server() as web:
        http = await measure(web, runs)
    for transport, (cancels, echoes) in (("stdio", stdio), ("http", http)):
        print(line(f"{transport}: cancel → return", cancels))
        print(line(f"{transport}: echo (baseline)", echoes))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    anyio.run(main, parser.parse_args().runs)
