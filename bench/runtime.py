"""The runtime's own overhead per streamed delta and per turn, without a real provider.

    python bench/runtime.py [--deltas 2000] [--turns 200]

Each measurement runs the same scripted answer twice in this process: once straight
from the scripted provider (the baseline: what the provider itself costs), once through
``Runtime.run_turn_streaming`` (session checks, the turn task, the event stream, history
commit). The difference is the runtime's overhead. Both session stores are measured.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.ids import AgentId
from thalos_bot.domain.messages import Message
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.base import ModelRequest, SystemPart
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.protocol import SessionStore
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.telemetry.logging import configure_logging

CALLER = SecurityContext.of("bench")
CATALOG = AgentCatalog([AgentDefinition(AgentId("a"), "A", "", "You are terse.")])


def answer(deltas: int) -> list[Say]:
    return [Say(*(f"w{i} " for i in range(deltas)))]


async def baseline(deltas: int, repeats: int) -> float:
    """Seconds per answer when the provider's stream is read directly."""
    provider = ScriptedProvider(default=lambda _request: answer(deltas))
    request = ModelRequest("m", 1000, [SystemPart("x")], [Message.user("go")])
    started = time.perf_counter()
    for _ in range(repeats):
        async for _event in provider.stream(request):
            pass
    return (time.perf_counter() - started) / repeats


@asynccontextmanager
async def store_named(name: str) -> AsyncIterator[SessionStore]:
    if name == "memory":
        yield MemorySessionStore()
        return
    with tempfile.TemporaryDirectory() as folder:
        db = await Database.open(Path(folder) / "bench.db")
        try:
            yield SqliteSessionStore(db)
        finally:
            await db.aclose()


async def through_runtime(store_name: str, deltas: int, repeats: int) -> list[float]:
    """Seconds per turn, each turn in a fresh session (history stays one turn long)."""
    provider = ScriptedProvider(default=lambda _request: answer(deltas))
    times: list[float] = []
    async with store_named(store_name) as store:
        runtime = Runtime(
            catalog=CATALOG, store=store, provider=provider, settings=RuntimeSettings("m")
        )
        async with runtime:
            for _ in range(repeats):
                session = await runtime.create_session("a", CALLER)
                started = time.perf_counter()
                async for _event in runtime.run_turn_streaming(
                    TurnRequest(session.id, CALLER, "go")
                ):
                    pass
                times.append(time.perf_counter() - started)
    return times


def fmt_us(seconds: float) -> str:
    return f"{seconds * 1e6:8.2f} µs"


async def main(deltas: int, turns: int) -> None:
    print(f"scripted answer: {deltas} deltas per turn; {turns} turns per measurement\n")
    configure_logging("warning")
    print(f"{'store':<8} {'per delta':>14} {'per turn p50':>14} {'per turn p99':>14}")
    for store_name in ("memory", "sqlite"):
        # Overhead per delta: a long answer, minus the provider's own cost.
        long_base = await baseline(deltas, max(3, turns // 20))
        long_runs = await through_runtime(store_name, deltas, max(3, turns // 20))
        per_delta = (statistics.median(long_runs) - long_base) / deltas
        # Overhead per turn: a one-delta answer, minus the provider's own cost.
        short_base = await baseline(1, turns)
        short_runs = await through_runtime(store_name, 1, turns)
        short_runs.sort()
        per_turn = statistics.median(short_runs) - short_base
        p99 = short_runs[min(len(short_runs) - 1, int(len(short_runs) * 0.99))] - short_base
        print(f"{store_name:<8} {fmt_us(per_delta):>14} {fmt_us(per_turn):>14} {fmt_us(p99):>14}")
    print("\nper delta = (runtime turn - provider alone) / deltas, median of runs;")
    print("per turn = a one-delta turn through the runtime minus the provider alone.")


def cli(argv: list[str] | None = None, runner: Callable[..., None] = anyio.run) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args(argv)
    runner(main, args.deltas, args.turns)


if __name__ == "__main__":
    cli()
