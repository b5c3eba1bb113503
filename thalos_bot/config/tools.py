"""``[[mcp_servers]]``, ``[[tool_policies]]`` and ``[tools]``: where tools come from and who may
run them.

Values in ``env`` and ``headers`` may name environment variables as ``"${GITHUB_TOKEN}"``;
they are resolved when the server starts, so secrets stay out of ``bot.toml``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    field_validator,
    model_validator,
)

from thalos_bot.config.types import DAY, HOUR, Glob, Slug, duration

ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${NAME}`` inside an ``env`` or ``headers`` value."""

RESERVED_SOURCE_NAMES = frozenset({"memory", "skills"})
"""Names of the built-in tool sources, which an MCP server may not take."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_ROLE = re.compile(r"^\S+$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


def _check_references(values: dict[str, str]) -> dict[str, str]:
    for key, value in values.items():
        leftover = ENV_REFERENCE.sub("", value)
        if "${" in leftover:
            raise ValueError(
                f"{key}: write a variable reference as ${{NAME}} "
                "(letters, digits and '_', not starting with a digit)"
            )
    return values


class McpServerSettings(_Section):
    """``[[mcp_servers]]``: one MCP server, run as a subprocess (``command``) or reached over
    streamable HTTP (``url``). Its tools appear to the model as ``{name}__{tool}``."""

    name: Slug
    enabled: StrictBool = True
    command: str | None = Field(None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = Field(None, pattern=r"^https?://\S+$")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: Annotated[float, duration(high=DAY)] = 60.0
    """How long one tool call may run."""
    startup_timeout: Annotated[float, duration(high=HOUR)] | None = None
    """How long this server may take to start; default ``tools.startup_timeout``."""
    allow: list[Glob] = Field(default_factory=lambda: ["*"])
    """Globs over the server's own tool names; only matching tools are offered."""
    deny: list[Glob] = Field(default_factory=list)
    """Globs over the server's own tool names; matching tools are never offered."""

    @field_validator("name")
    @classmethod
    def _separator_free(cls, value: str) -> str:
        if "__" in value or value.endswith("_"):
            raise ValueError(
                "must not contain '__' or end with '_' ('__' separates server and tool)"
            )
        if value in RESERVED_SOURCE_NAMES:
            raise ValueError(f"{value!r} is the name of the built-in {value} tools")
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not _ENV_NAME.match(key):
                raise ValueError(f"{key!r} is not an environment variable name")
        return _check_references(value)

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not _HEADER_NAME.match(key):
                raise ValueError(f"{key!r} is not an HTTP header name")
        return _check_references(value)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give either command (a stdio server) or url (a streamable HTTP server)"
            )
        if self.url is not None:
            stray = [k for k in ("args", "env", "cwd") if k in self.model_fields_set]
            if stray:
                raise ValueError(f"only a stdio server (command) takes {', '.join(stray)}")
        elif "headers" in self.model_fields_set:
            raise ValueError("only a streamable HTTP server (url) takes headers")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"


def _unique_server_names(servers: list[McpServerSettings]) -> list[McpServerSettings]:
    seen: dict[str, int] = {}
    for index, server in enumerate(servers):
        if server.name in seen:
            raise ValueError(
                f"two servers are named {server.name!r} "
                f"(mcp_servers[{seen[server.name]}] and mcp_servers[{index}])"
            )
        seen[server.name] = index
    return servers


McpServerList = Annotated[list[McpServerSettings], AfterValidator(_unique_server_names)]
"""The type of ``Settings.mcp_servers``: server names must be unique."""


def _check_role(value: str) -> str:
    if not _ROLE.match(value):
        raise ValueError("a role must be non-empty and contain no spaces")
    return value


Role = Annotated[str, AfterValidator(_check_role)]


class ToolPolicySettings(_Section):
    """``[[tool_policies]]``: tools matching ``tool`` (a glob over qualified names such as
    ``fs__write_*``) run only for a caller holding every role in ``require_roles``, and
    only as ``action`` says: ``allow``, ``deny``, or ``ask`` the person first."""

    tool: Glob
    require_roles: list[Role] = Field(default_factory=list)
    action: Literal["allow", "deny", "ask"] | None = None

    @model_validator(mode="after")
    def _says_something(self) -> ToolPolicySettings:
        if not self.require_roles and self.action is None:
            raise ValueError("give require_roles, action, or both")
        return self


class ToolsSettings(_Section):
    """``[tools]``: limits that apply to every tool call."""

    max_parallel_calls: int = Field(4, ge=1, le=64)
    """Tool calls of one session that may run at once."""
    max_result_chars: int = Field(20_000, ge=200, le=1_000_000)
    """A longer tool result is cut, with a marker saying how much."""
    startup_timeout: Annotated[float, duration(high=HOUR)] = 30.0
    """How long an MCP server may take to start and list its tools."""
    restart_backoff: Annotated[float, duration(high=HOUR)] = 2.0
    """Delay before the second restart of a failing server; it doubles after each failure."""
    approval_timeout: Annotated[float, duration(high=DAY)] = 120.0
    """How long a tool call with ``action = "ask"`` waits for an answer; then it is denied."""
    restart_backoff_max: Annotated[float, duration(high=DAY)] = 300.0
