"""One configured MCP server as a :class:`~thalos_bot.tools.source.ToolSource`.

A supervisor task owns the connection (entered and exited in that task, as the SDK
requires) and holds it open until the server goes away or the host stops. Callers share
the live session; when it is gone, the next call asks the supervisor for a new one. The
first restart after a failure is immediate; further failures back off exponentially, and
a call during the back-off gets an "unavailable" result instead of a restart.

A call the server never ran (over HTTP: our session was refused with 404, or the server
could not be reached; see :mod:`thalos_bot.tools.mcp.httpwatch`) is sent once more, on a
new connection. A call that failed after the server took it is never sent again. A
session that a healthy server forgot while nobody was calling is replaced at once.

The MCP SDK loads with the first server that starts (:mod:`~thalos_bot.tools.mcp.connection`
and :mod:`~thalos_bot.tools.mcp.content` are imported there), so a host with no MCP server
configured, or with every server disabled, never pays for it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import structlog
from anyio.abc import TaskStatus

from thalos_bot.config.tools import McpServerSettings, ToolsSettings
from thalos_bot.tools.mcp.envrefs import (
    MissingVariableError,
    referenced_values,
    resolve_references,
    scrub,
)
from thalos_bot.tools.mcp.httpwatch import SESSION_LOST, Undelivered, watch_call
from thalos_bot.tools.mcp.stderr import StderrTail, excerpt
from thalos_bot.tools.policy import matches_any
from thalos_bot.tools.source import SourceStatus, SourceTool
from thalos_bot.tools.types import ToolContext, ToolResult

if TYPE_CHECKING:
    from mcp.shared.exceptions import MCPError

    from thalos_bot.tools.mcp.connection import Connection

log = structlog.get_logger(__name__)

_CALL_GRACE = 5.0
"""Extra time past a call's timeout before we stop waiting for the SDK's own timeout."""


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = next(
            (e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())),
            exc.exceptions[0],
        )
    return exc


def describe_failure(exc: BaseException, settings: McpServerSettings) -> str:
    """A short, secret-free sentence for why a server could not start or went away."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    from thalos_bot.tools.mcp.connection import StartupTimeoutError

    leaf = _leaf(exc)
    if isinstance(leaf, MissingVariableError | StartupTimeoutError):
        return str(leaf)
    if isinstance(leaf, FileNotFoundError):
        return f"cannot run {settings.command!r}: no such file or directory"
    if isinstance(leaf, PermissionError):
        return f"cannot run {settings.command!r}: permission denied"
    if isinstance(leaf, MCPError):
        if leaf.code == CONNECTION_CLOSED:
            return "the server closed the connection"
        return f"the server answered with an error ({leaf.code}): {leaf.message}"
    if isinstance(leaf, httpx2.HTTPError):
        return f"cannot reach {settings.url}: {type(leaf).__name__}"
    text = f"{type(leaf).__name__}: {leaf}".strip()
    return text if len(text) <= 300 else text[:299] + "…"


class McpServerSource:
    """An MCP server's tools, named by the server's configured ``name``."""

    def __init__(
        self,
        settings: McpServerSettings,
        limits: ToolsSettings,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self._limits = limits
        self._environ = environ
        self._tools: tuple[SourceTool, ...] = ()
        self._offered: frozenset[str] = frozenset()
        self._status = SourceStatus("starting" if settings.enabled else "disabled")
        self._live: Connection | None = None
        self._wanted = anyio.Event()
        self._attempt: anyio.Event | None = None
        self._failures = 0
        self._retry_at = -math.inf
        self._stopping = False
        self._ever_ready = False
        self._connecting: anyio.CancelScope | None = None
        self._finished = anyio.Event()

    @property
    def name(self) -> str:
        return self.settings.name

    def tools(self) -> tuple[SourceTool, ...]:
        return self._tools

    def status(self) -> SourceStatus:
        return self._status

    # -- supervision -------------------------------------------------------------------

    def begin_attempt(self) -> anyio.Event:
        """Ask for a connection; the event is set once the attempt has succeeded or failed."""
        if self._attempt is None or self._attempt.is_set():
            self._attempt = anyio.Event()
            self._wanted.set()
        return self._attempt

    def stop(self) -> None:
        """Close the connection (or abandon a start in progress) and end :meth:`run`."""
        self._stopping = True
        if self._live is not None:
            self._live.end(None)
        elif self._connecting is not None:
            self._connecting.cancel()
        self._wanted.set()

    @property
    def finished(self) -> anyio.Event:
        """Set when :meth:`run` has returned."""
        return self._finished

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The supervisor: connect whenever asked, until :meth:`stop`."""
        task_status.started()
        try:
            while True:
                await self._wanted.wait()
                self._wanted = anyio.Event()
                if self._stopping:
                    break
                attempt = self._attempt or anyio.Event()
                if anyio.current_time() >= self._retry_at:
                    await self._connect_once(attempt)
                attempt.set()
        finally:
            self._live = None
            if self.settings.enabled:
                self._status = SourceStatus("stopped", len(self._tools))
            if self._attempt is not None:
                self._attempt.set()
            self._finished.set()

    async def _connect_once(self, attempt: anyio.Event) -> None:
        from thalos_bot.tools.mcp.connection import open_connection

        self._status = SourceStatus("starting", len(self._tools))
        tail = StderrTail()
        reason: str | None = None
        live: Connection | None = None
        environ = os.environ if self._environ is None else self._environ
        secrets = referenced_values(self.settings.env, environ) | referenced_values(
            self.settings.headers, environ
        )
        self._connecting = anyio.CancelScope()
        try:
            env = resolve_references(self.settings.env, environ, server=self.name, section="env")
            headers = resolve_references(
                self.settings.headers, environ, server=self.name, section="headers"
            )
            log.info(
                "mcp-server-starting",
                server=self.name,
                transport=self.settings.transport,
                target=self.settings.command or self.settings.url,
            )
            with self._connecting:
                async with (
                    tail.capture() as errlog,
                    open_connection(
                        self.settings,
                        env=env,
                        headers=headers,
                        errlog=errlog,
                        startup_timeout=self.settings.startup_timeout
                        or self._limits.startup_timeout,
                    ) as connection,
                ):
                    self._connecting = None
                    live = connection
                    self._adopt(connection)
                    attempt.set()
                    await connection.lifeline.ended.wait()
                    reason = connection.lifeline.reason
        except Exception as exc:  # noqa: BLE001 - any start-up or transport failure is reported
            reason = scrub(describe_failure(exc, self.settings), secrets)
            if live is not None and live.lifeline.session_lost:
                reason = SESSION_LOST  # what the SDK raised while closing it says less
        finally:
            self._live = None
            self._connecting = None
        if self._stopping:
            return
        lost = live is not None and live.lifeline.session_lost
        if lost and live is not None and self._was_healthy(live):
            self._failures = 0  # a forgotten session is not a crash loop
        self._failures += 1
        delay = self._backoff()
        self._retry_at = anyio.current_time() + delay
        stderr = scrub(tail.text(), secrets)
        self._status = SourceStatus(
            "unavailable" if self._ever_ready else "failed",
            len(self._tools),
            reason or "the connection closed",
            excerpt(stderr),
        )
        if lost and delay == 0:
            self.begin_attempt()
        log.warning(
            "mcp-server-down" if self._ever_ready else "mcp-server-failed",
            server=self.name,
            reason=self._status.reason,
            failures=self._failures,
            retry_in_s=round(delay, 3),
            **({"stderr_tail": stderr} if stderr else {}),
        )

    def _adopt(self, connection: Connection) -> None:
        tools = [
            SourceTool(t.name, t.description or t.title or "", dict(t.input_schema))
            for t in connection.tools
            if matches_any(self.settings.allow, t.name)
            and not matches_any(self.settings.deny, t.name)
        ]
        self._tools = tuple(tools)
        self._offered = frozenset(t.name for t in tools)
        self._live = connection
        self._status = SourceStatus("ready", len(tools))
        log.info(
            "mcp-server-ready",
            server=self.name,
            tools=len(tools),
            hidden=len(connection.tools) - len(tools),
            restarted=self._ever_ready,
        )
        self._ever_ready = True

    def _was_healthy(self, connection: Connection) -> bool:
        """Up long enough that losing it is news, not a server failing to stay up."""
        uptime = anyio.current_time() - connection.opened_at
        return uptime >= max(self._limits.restart_backoff, 1.0)

    def _backoff(self) -> float:
        if self._failures <= 1:
            return 0.0
        base = self._limits.restart_backoff * 2 ** (self._failures - 2)
        return float(min(base, self._limits.restart_backoff_max))

    async def _acquire(self) -> Connection | str:
        """The live connection, starting one if allowed; else why there is none."""
        live = self._live
        if live is not None and live.is_open:
            return live
        if self._stopping:
            return "the bot is shutting down"
        attempt = self._attempt
        if attempt is None or attempt.is_set():
            if self._retry_at > anyio.current_time():
                return self._unavailable_reason()
            attempt = self.begin_attempt()
        await attempt.wait()
        live = self._live
        if live is not None and live.is_open:
            return live
        return self._unavailable_reason()

    def _unavailable_reason(self) -> str:
        reason = self._status.reason or "it is not running"
        wait = self._retry_at - anyio.current_time()
        return f"{reason}; the next restart is in {math.ceil(wait)}s" if wait > 0 else reason

    # -- calls -------------------------------------------------------------------------

    async def call(
        self, tool: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        if tool not in self._offered:
            return ToolResult(f"There is no tool named {tool!r} on {self.name!r}.", "error")
        connection = await self._acquire()
        if isinstance(connection, str):
            return self._unavailable(connection)
        outcome = await self._call_on(connection, tool, arguments, context)
        if isinstance(outcome, ToolResult):
            return outcome
        # The server never ran it, so sending it once more cannot run it twice.
        self._abandon(connection, outcome)
        log.info("mcp-call-not-delivered", server=self.name, tool=tool, why=outcome)
        connection = await self._acquire()
        if isinstance(connection, str):
            return self._unavailable(connection)
        outcome = await self._call_on(connection, tool, arguments, context)
        if isinstance(outcome, ToolResult):
            return outcome
        log.warning("mcp-call-not-delivered-twice", server=self.name, tool=tool, why=outcome)
        return self._unavailable(self._abandon(connection, outcome))

    def _abandon(self, connection: Connection, why: Undelivered) -> str:
        """End a connection the server refused or could not be reached on (the HTTP
        watch has usually ended it already; the first reason stays), and say why."""
        if why == "session":
            connection.lifeline.lose_session()
            return SESSION_LOST
        reason = f"cannot reach {self.settings.url}"
        connection.end(reason)
        return reason

    def _unavailable(self, reason: str) -> ToolResult:
        return ToolResult(f"The tool server {self.name!r} is unavailable: {reason}.", "error")

    async def _call_on(
        self,
        connection: Connection,
        tool: str,
        arguments: Mapping[str, Any],
        context: ToolContext,
    ) -> ToolResult | Undelivered:
        """One attempt; the reason when the server never received or never ran it."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import REQUEST_TIMEOUT

        from thalos_bot.tools.mcp.content import render_result, result_images

        timeout = self.settings.timeout
        with watch_call() as probe:
            try:
                with anyio.move_on_after(timeout + _CALL_GRACE):
                    result = await connection.session.call_tool(
                        tool, dict(arguments), read_timeout_seconds=timeout
                    )
                    self._failures = 0
                    return ToolResult(
                        render_result(result),
                        "error" if result.is_error else "ok",
                        images=result_images(result, context.session_id, f"{self.name}__{tool}"),
                    )
            except MCPError as exc:
                if probe.undelivered is not None and exc.code != REQUEST_TIMEOUT:
                    return probe.undelivered
                return self._call_failed(connection, tool, exc)
            except Exception as exc:  # noqa: BLE001 - an unreadable answer is a tool error
                if probe.undelivered is not None:
                    return probe.undelivered
                log.warning(
                    "mcp-call-failed", server=self.name, tool=tool, error=type(exc).__name__
                )
                return ToolResult(
                    f"The call to {tool!r} failed: the answer of {self.name!r} could not be read.",
                    "error",
                )
        log.warning("mcp-call-timeout", server=self.name, tool=tool, timeout_s=timeout)
        return ToolResult(f"The tool {tool!r} did not finish within {timeout:g}s.", "error")

    def _call_failed(self, connection: Connection, tool: str, exc: MCPError) -> ToolResult:
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        if exc.code == REQUEST_TIMEOUT:
            log.warning(
                "mcp-call-timeout", server=self.name, tool=tool, timeout_s=self.settings.timeout
            )
            return ToolResult(
                f"The tool {tool!r} did not finish within {self.settings.timeout:g}s "
                "and was cancelled.",
                "error",
            )
        if exc.code == CONNECTION_CLOSED:
            connection.end("the connection closed during a call")
            log.warning("mcp-call-lost", server=self.name, tool=tool)
            return ToolResult(
                f"The tool server {self.name!r} went away during the call to {tool!r}; "
                "it will be restarted when next used.",
                "error",
            )
        log.info("mcp-call-error", server=self.name, tool=tool, code=exc.code)
        return ToolResult(
            f"The tool server {self.name!r} answered with an error: {exc.message}", "error"
        )
