"""``[[mcp_servers]]``, ``[[tool_policies]]`` and ``[tools]`` validation and messages."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from thalos_bot.config.loader import ConfigError, validate
from thalos_bot.config.tools import (
    McpServerList,
    McpServerSettings,
    ToolPolicySettings,
    ToolsSettings,
)
from thalos_bot.tools.mcp.envrefs import MissingVariableError, resolve_references


class _Doc(BaseModel):
    """A stand-in for ``Settings`` holding just the tool keys."""

    model_config = ConfigDict(extra="forbid")
    mcp_servers: McpServerList = Field(default_factory=list)
    tool_policies: list[ToolPolicySettings] = Field(default_factory=list)
    tools: ToolsSettings = ToolsSettings()


def _problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        validate(_Doc, raw, "bot.toml")
    return caught.value.problems


def test_stdio_and_http_servers() -> None:
    doc = validate(
        _Doc,
        {
            "mcp_servers": [
                {"name": "fs", "command": "npx", "args": ["-y", "x"], "env": {"A": "${B}"}},
                {"name": "web", "url": "https://example.test/mcp", "timeout": "2m"},
            ],
            "tool_policies": [{"tool": "fs__write_*", "require_roles": ["developer"]}],
            "tools": {"max_parallel_calls": 2},
        },
        "bot.toml",
    )
    fs, web = doc.mcp_servers
    assert (fs.transport, fs.enabled, fs.timeout, fs.allow, fs.deny) == (
        "stdio",
        True,
        60,
        ["*"],
        [],
    )
    assert (web.transport, web.timeout) == ("http", 120)
    assert doc.tool_policies[0].require_roles == ["developer"]
    assert doc.tools.max_parallel_calls == 2
    assert doc.tools.max_result_chars == 20_000


def test_a_server_needs_exactly_one_transport() -> None:
    assert _problems({"mcp_servers": [{"name": "x"}]}) == [
        (
            "bot.toml: mcp_servers[0]: give either command (a stdio server) "
            "or url (a streamable HTTP server)"
        )
    ]
    both = {"name": "x", "command": "a", "url": "http://localhost/"}
    assert len(_problems({"mcp_servers": [both]})) == 1
    assert _problems({"mcp_servers": [{"name": "x", "url": "http://h/", "env": {"A": "b"}}]}) == [
        "bot.toml: mcp_servers[0]: only a stdio server (command) takes env"
    ]
    assert _problems({"mcp_servers": [{"name": "x", "command": "a", "headers": {"A": "b"}}]}) == [
        "bot.toml: mcp_servers[0]: only a streamable HTTP server (url) takes headers"
    ]


def test_server_names_are_unique_slugs_without_the_separator() -> None:
    servers = [{"name": "fs", "command": "a"}, {"name": "web", "command": "b"}]
    servers.append({"name": "fs", "command": "c"})
    assert _problems({"mcp_servers": servers}) == [
        "bot.toml: mcp_servers: two servers are named 'fs' (mcp_servers[0] and mcp_servers[2])"
    ]
    [problem] = _problems({"mcp_servers": [{"name": "my__fs", "command": "a"}]})
    assert problem.startswith("bot.toml: mcp_servers[0].name: must not contain '__'")
    assert _problems({"mcp_servers": [{"name": "memory", "command": "a"}]}) == [
        "bot.toml: mcp_servers[0].name: 'memory' is the name of the built-in memory tools"
    ]
    [problem] = _problems({"mcp_servers": [{"name": "Fs", "command": "a"}]})
    assert problem == (
        "bot.toml: mcp_servers[0].name: must be a slug: lower-case letters, digits, "
        "'-' or '_', starting with a letter"
    )


def test_unknown_keys_and_bad_references_are_errors() -> None:
    assert _problems({"mcp_servers": [{"name": "x", "command": "a", "timout": 3}]}) == [
        "bot.toml: mcp_servers[0].timout: unknown key (did you mean 'timeout'?)"
    ]
    [problem] = _problems({"mcp_servers": [{"name": "x", "command": "a", "env": {"A": "${1X}"}}]})
    assert problem.startswith("bot.toml: mcp_servers[0].env: A: write a variable reference as")
    [problem] = _problems({"mcp_servers": [{"name": "x", "command": "a", "env": {"A B": "v"}}]})
    assert "is not an environment variable name" in problem


def test_policies_need_roles_or_an_action() -> None:
    assert _problems({"tool_policies": [{"tool": "fs__*", "require_roles": []}]}) == [
        "bot.toml: tool_policies[0]: give require_roles, action, or both"
    ]
    doc = validate(_Doc, {"tool_policies": [{"tool": "fs__*", "action": "ask"}]}, "bot.toml")
    assert doc.tool_policies[0].action == "ask"
    assert doc.tool_policies[0].require_roles == []
    assert doc.tools.approval_timeout == 120.0
    [problem] = _problems({"tool_policies": [{"tool": "fs__*", "action": "maybe"}]})
    assert problem.startswith("bot.toml: tool_policies[0].action:")
    [problem] = _problems({"tool_policies": [{"tool": "fs__*", "require_roles": ["a b"]}]})
    assert "role must be non-empty" in problem


def test_references_resolve_and_a_missing_one_names_the_variable() -> None:
    values = {"AUTH": "Bearer ${TOKEN}", "PLAIN": "x", "TWO": "${A}-${B}"}
    environ = {"TOKEN": "t0k", "A": "1", "B": "2"}
    assert resolve_references(values, environ, server="gh", section="env") == {
        "AUTH": "Bearer t0k",
        "PLAIN": "x",
        "TWO": "1-2",
    }
    with pytest.raises(MissingVariableError) as caught:
        resolve_references(
            {"Authorization": "Bearer ${GITHUB_TOKEN}"}, {}, server="gh", section="headers"
        )
    assert str(caught.value) == (
        "headers.Authorization refers to the environment variable GITHUB_TOKEN, which is not set"
    )
    assert (caught.value.server, caught.value.variable) == ("gh", "GITHUB_TOKEN")


def test_settings_are_frozen() -> None:
    server = McpServerSettings(name="x", command="a")
    with pytest.raises(ValueError, match="frozen"):
        server.name = "y"  # type: ignore[misc]
