"""What a first turn would otherwise load lazily, loaded while the daemon starts.

The memory embedder (WordLlama's weights and tokenizer, or a local BERT folder) loads
on its first embed: without a warm-up, the first message after a start pays for it
(0.2-1.3 s, depending on the machine) before its model request can leave, since
auto-recall embeds the message first. The host starts the warm-up as soon as memory is
built, so it runs alongside the rest of start-up (MCP servers, the channels' first
calls), and READY waits for it (see ``thalos_bot.cli.cmd_serve``).

A turn that arrives while the warm-up is still running waits for it rather than loading
again: each embedder loads under its own lock and keeps what it loaded. A part that
fails to load is logged and left to its first use, which reports it as it always did;
a warm-up never stops the daemon.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from time import monotonic
from typing import Protocol, runtime_checkable

import anyio
import structlog

from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.memory.embedding.base import Embedder

log = structlog.get_logger(__name__)


@runtime_checkable
class Preloadable(Protocol):
    """Something that can load now what it would otherwise load on first use."""

    async def load(self) -> None: ...


@dataclass(slots=True)
class WarmUp:
    """Named loading steps, run once in order; :attr:`done` is set when all have
    ended (loaded or failed)."""

    steps: list[tuple[str, Callable[[], Awaitable[None]]]] = field(default_factory=list)
    done: anyio.Event = field(default_factory=anyio.Event)

    @property
    def parts(self) -> list[str]:
        return [name for name, _ in self.steps]

    async def run(self) -> None:
        started = monotonic()
        loaded: list[str] = []
        try:
            for name, step in self.steps:
                try:
                    await step()
                except Exception as exc:  # noqa: BLE001 - a warm-up never stops the daemon
                    log.warning("warm_up_failed", part=name, error=type(exc).__name__)
                else:
                    loaded.append(name)
        finally:
            self.done.set()
        if self.steps:
            log.info("warmed_up", parts=loaded, seconds=round(monotonic() - started, 3))


def recalls_every_turn(catalog: AgentCatalog) -> bool:
    """An agent recalls memories into every turn, so the embedder runs before the
    turn's model request. (The memory tools embed only after a model round, behind the
    model's own latency; they load the embedder on first use.)"""
    return any(agent.memory.enabled for agent in catalog)


def warm_up_plan(catalog: AgentCatalog, embedder: Embedder) -> WarmUp:
    """What this configuration's first turn would load lazily before its request."""
    plan = WarmUp()
    if embedder.available and isinstance(embedder, Preloadable) and recalls_every_turn(catalog):
        plan.steps.append((f"embedder {embedder.model}", embedder.load))
    return plan
