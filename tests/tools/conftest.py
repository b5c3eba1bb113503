"""Helpers for the tool tests: the test MCP server and its side-effect record."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from thalos_bot.config.tools import McpServerSettings, ToolsSettings
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.types import ToolCall, ToolContext

TEST_SERVER = Path(__file__).with_name("mcp_test_server.py")
LIMITS = ToolsSettings(startup_timeout=30, restart_backoff=60)
"""Generous start-up; a long back-off so a test sees it rather than racing it."""


def stdio_server(name: str = "test", record: Path | None = None, **extra: Any) -> McpServerSettings:
    """Settings for the test server over stdio; calls are recorded in ``record``."""
    fields: dict[str, Any] = {"command": sys.executable, "args": [str(TEST_SERVER)], **extra}
    fields["env"] = dict(fields.get("env", {}))
    if record is not None:
        fields["env"]["MCP_TEST_RECORD"] = str(record)
    return McpServerSettings(name=name, **fields)


def agent(*globs: str, agent_id: str = "assistant") -> AgentDefinition:
    return AgentDefinition(AgentId(agent_id), agent_id.title(), "", "", tools=globs or ("*",))


def context(*roles: str, who: AgentDefinition | None = None) -> ToolContext:
    return ToolContext(SecurityContext.of("alice", roles), who or agent(), SessionId("s_test"))


def tool_call(name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(f"call_{name}", name, arguments)


def read_record(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "record.jsonl"


UNENDING = 86_400.0
"""Seconds a ``slow`` call asks for: a day, so in a test it ends only if interrupted."""


async def cancel_once_running(catalog: SourceCatalog, server: str, group: str) -> None:
    """Call ``{server}__slow`` for a day, and cancel the caller as soon as the server
    runs it. Returning at all shows the cancel interrupted the call (it could not have
    finished on its own; pytest's timeout ends a hang). How long that takes is measured
    by ``bench/mcp_cancel.py``."""
    caller = anyio.CancelScope()

    async def slow() -> None:
        with caller:
            await catalog.call(
                tool_call(f"{server}__slow", seconds=UNENDING, tag=group, meet=group), context()
            )

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        met = await catalog.call(tool_call(f"{server}__rendezvous", group=group, size=2), context())
        assert met.content == "met", "the slow call never reached the server"
        caller.cancel()
    assert caller.cancelled_caught
