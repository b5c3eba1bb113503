"""Start every configured MCP server with the host, and stop them all on exit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager

import anyio
import structlog

from thalos_bot.config.tools import McpServerSettings, ToolsSettings
from thalos_bot.tools.mcp.supervisor import McpServerSource

log = structlog.get_logger(__name__)

STOP_GRACE = 10.0
"""Seconds the servers get to close at exit before their tasks are cancelled."""


class McpServers:
    """The configured MCP servers as tool sources (disabled ones included, with no tools)."""

    def __init__(self, sources: Sequence[McpServerSource]) -> None:
        self.sources: tuple[McpServerSource, ...] = tuple(sources)

    def __iter__(self) -> Iterator[McpServerSource]:
        return iter(self.sources)

    def __len__(self) -> int:
        return len(self.sources)

    @classmethod
    @asynccontextmanager
    async def start(
        cls,
        servers: Sequence[McpServerSettings],
        limits: ToolsSettings | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> AsyncIterator[McpServers]:
        """Start the enabled servers concurrently, each bounded by ``startup_timeout``.

        A server that fails to start does not fail the others: its status says why.
        ``environ`` (default: the process environment) resolves ``${NAME}`` references.
        """
        limits = limits or ToolsSettings()
        sources = [McpServerSource(s, limits, environ=environ) for s in servers]
        active = [s for s in sources if s.settings.enabled]
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            try:
                for source in active:
                    await tg.start(source.run)
                for attempt in [s.begin_attempt() for s in active]:
                    await attempt.wait()
                log.info(
                    "mcp-servers-started",
                    ready=[s.name for s in active if s.status().state == "ready"],
                    failed=[s.name for s in active if s.status().state == "failed"],
                    disabled=[s.name for s in sources if not s.settings.enabled],
                )
                yield cls(sources)
            except Exception as exc:  # noqa: BLE001 - re-raised below, unwrapped
                # Raised out of the task group it would arrive as an ExceptionGroup.
                failure = exc
            finally:
                for source in active:
                    source.stop()
                # Servers get a grace period to close; then their tasks are cancelled,
                # which still ends each subprocess (the SDK's shutdown is shielded).
                with anyio.move_on_after(STOP_GRACE, shield=True):
                    for source in active:
                        await source.finished.wait()
                tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
