"""Interop with the reference server ``@modelcontextprotocol/server-everything`` (npm)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.tools.conftest import LIMITS, agent, context, tool_call
from thalos_bot.config.tools import McpServerSettings
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.mcp import McpServers

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

INTEROP = Path(__file__).resolve().parents[1] / "interop"
ENTRY = INTEROP / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def _server() -> McpServerSettings:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed; the MCP interop test needs Node.js and npm")
    if not ENTRY.is_file():
        pytest.skip(
            "@modelcontextprotocol/server-everything is not installed: "
            "run `npm ci` in tests/interop"
        )
    return McpServerSettings(name="everything", command=node, args=[str(ENTRY), "stdio"])


async def test_lists_and_calls_the_reference_server() -> None:
    async with McpServers.start([_server()], LIMITS) as servers:
        assert servers.sources[0].status().state == "ready", servers.sources[0].status()
        catalog = SourceCatalog(servers.sources)
        names = {spec.name for spec in catalog.specs_for(agent())}
        echoed = await catalog.call(
            tool_call("everything__echo", message="hi from thalos"), context()
        )
        summed = await catalog.call(tool_call("everything__get-sum", a=2, b=40), context())
        image = await catalog.call(tool_call("everything__get-tiny-image"), context())
        wrong = await catalog.call(tool_call("everything__get-sum", a="x"), context())
    assert {"everything__echo", "everything__get-sum"} <= names
    assert (echoed.content, echoed.outcome) == ("Echo: hi from thalos", "ok")
    assert summed.outcome == "ok"
    assert "42" in summed.content
    assert "[image: image/png" in image.content
    assert wrong.outcome == "error"
