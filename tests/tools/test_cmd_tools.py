"""``thalos-bot tools``: server states and each agent's tools with their policies."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from structlog.testing import capture_logs

from tests.tools.conftest import LIMITS, agent, stdio_server
from thalos_bot.cli.cmd_tools import run_tools_command
from thalos_bot.config.memory import MemorySettings
from thalos_bot.config.skills import SkillsSettings
from thalos_bot.config.tools import McpServerSettings, ToolPolicySettings, ToolsSettings
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.ids import AgentId

pytestmark = pytest.mark.slow


@dataclass
class _Settings:
    mcp_servers: list[McpServerSettings]
    tool_policies: list[ToolPolicySettings] = field(default_factory=list)
    tools: ToolsSettings = LIMITS
    memory: MemorySettings = field(default_factory=MemorySettings)
    skills: SkillsSettings = field(default_factory=SkillsSettings)


def _agents() -> AgentCatalog:
    return AgentCatalog(
        [agent("test__echo", "test__record", "test__say_*"), agent("x", agent_id="reader")]
    )


def test_lists_servers_and_the_tools_each_agent_sees(capsys: pytest.CaptureFixture[str]) -> None:
    settings = _Settings(
        [
            stdio_server(),
            stdio_server(name="broken", command="/nonexistent/server", args=[]),
            stdio_server(name="off", enabled=False),
        ],
        [
            ToolPolicySettings(tool="test__record", require_roles=["developer", "ops"]),
            ToolPolicySettings(tool="test__e*", action="ask"),
        ],
    )
    with capture_logs():
        code = run_tools_command(settings, _agents())
    out = capsys.readouterr().out
    assert code == 1  # one enabled server failed
    assert out.splitlines() == [
        "tool sources (7):",
        "  test      ready: 13 tools",
        "  broken    failed: cannot run '/nonexistent/server': no such file or directory",
        "  off       disabled",
        "  memory    ready: 4 tools",
        "  skills    ready: 3 tools",
        "  agents    disabled: no agent has delegates",
        "  schedule  ready: 3 tools",
        "tool policies:",
        "  test__record  requires developer, ops",
        "  test__e*      ask",
        "agent assistant (Assistant): 3 tools",
        "  test__echo       ask",
        "  test__record     requires developer, ops",
        "  test__say_hello  test tool 'say.hello'",
        "agent reader (Reader): no tools",
    ]


def test_one_agent_and_an_unknown_agent(capsys: pytest.CaptureFixture[str]) -> None:
    settings = _Settings([stdio_server()])
    with capture_logs():
        assert run_tools_command(settings, _agents(), "reader") == 0
        assert run_tools_command(settings, _agents(), "nobody") == 2
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == "agent reader (Reader): no tools"
    assert "assistant (Assistant)" not in captured.out
    assert "no agent called 'nobody' (agents: assistant, reader)" in captured.err


def test_no_servers_configured(capsys: pytest.CaptureFixture[str]) -> None:
    with capture_logs():
        assert run_tools_command(_Settings([]), _agents(), "assistant") == 0
    assert capsys.readouterr().out.splitlines() == [
        "tool sources (4):",
        "  memory    ready: 4 tools",
        "  skills    ready: 3 tools",
        "  agents    disabled: no agent has delegates",
        "  schedule  ready: 3 tools",
        "agent assistant (Assistant): no tools",
    ]


def _everything() -> AgentCatalog:
    return AgentCatalog(
        [AgentDefinition(AgentId("helper"), "Helper", "", "", tools=("*",), skills=("*",))]
    )


def test_the_built_in_tools_are_listed_like_any_other(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with capture_logs():
        assert run_tools_command(_Settings([]), _everything()) == 0
    assert capsys.readouterr().out.splitlines()[-11:] == [
        "agent helper (Helper): 10 tools",
        "  memory__remember",
        "  memory__recall",
        "  memory__forget",
        "  memory__list",
        "  skills__load",
        "  skills__read",
        "  skills__search",
        "  schedule__create",
        "  schedule__list",
        "  schedule__cancel",
    ]


def test_switched_off_memory_tools_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    settings = _Settings([], memory=MemorySettings(tools=False))
    with capture_logs():
        assert run_tools_command(settings, _everything()) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  memory    disabled: [memory] tools = false" in out
    assert "agent helper (Helper): 6 tools" in out


def test_an_agent_with_delegates_is_listed_with_the_delegate_tool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    agents = AgentCatalog(
        [
            AgentDefinition(AgentId("boss"), "Boss", "", "", delegates=("helper",)),
            AgentDefinition(AgentId("helper"), "Helper", "", "", tools=("agents__*",)),
        ]
    )
    with capture_logs():
        assert run_tools_command(_Settings([]), agents) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  agents    ready: 1 tool" in out
    boss = out[
        out.index("agent boss (Boss): 8 tools") : out.index("agent helper (Helper): no tools")
    ]
    assert "  agents__delegate" in boss
    assert out[-1] == "agent helper (Helper): no tools"  # its globs allow it, no delegates
