"""The runtime's own overhead per streamed delta and per turn, without a real provider.

    python bench/runtime.py [--deltas 2000] [--turns 200] [--history 1000 10000 50000]

Each measurement runs the same scripted answer twice in this process: once straight
from the scripted provider (the baseline: what the provider itself costs), once through
``Runtime.run_turn_streaming`` (session checks, the turn task, the event stream, history
commit). The difference is the runtime's overhead. Both session stores are measured.
Then the cost of long histories at each ``--history`` size. Each stored turn is a question
(200 characters) and an answer (800); every fourth turn also has a tool round whose result
is 3,000 characters. Printed per size:

* **prepare** — masking, sizing and the cut search over the whole history held in
  memory (the worst case: a session with no summary yet), median of 5 runs, with the
  quadratic trim of 0.x alongside at the sizes where it finishes in reasonable time;
* **turn, summ.** — a whole turn (scripted one-word answer) on SQLite for a session
  whose summary covers all but the last six turns: load from the boundary + prepare +
  commit;
* **turn, 1st** — the same session before it has a summary: the load is capped at four
  context windows and the turn makes the summary (scripted);
* **max stall** — the longest the event loop was late (a 1 ms sleeper) during that
  first-compaction turn, while 20 other conversations stream a delta every 5 ms, and
  (baseline) the same probe for 0.3 s with only those 20 streaming: what the machine
  itself adds.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import anyio

from thalos_bot.domain.agents import AgentCatalog, AgentDefinition
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId
from thalos_bot.domain.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from thalos_bot.domain.prompt import SystemPart
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.base import ModelRequest
from thalos_bot.providers.scripted import Reply, Say, ScriptedProvider
from thalos_bot.runtime.compaction import (
    SUMMARY_INSTRUCTIONS,
    CompactionPolicy,
    choose_cut,
    mask_tool_results,
    measure,
    message_chars,
    with_summary,
)
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.protocol import ContextState, SessionStore
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


async def main(deltas: int, turns: int, history: list[int]) -> None:
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
    if history:
        await history_report(history)


# --- long histories (--history) ----------------------------------------------------------

POLICY = CompactionPolicy()


def conversation(turns: int) -> list[Message]:
    messages: list[Message] = []
    for index in range(turns):
        messages.append(Message.user(f"question {index} " + "q" * 190))
        if index % 4 == 3:
            call = f"toolu_{index}"
            messages.append(Message("assistant", (ToolUseBlock(call, "files__read", {"n": 1}),)))
            messages.append(Message("user", (ToolResultBlock(call, "r" * 3000),)))
        messages.append(Message("assistant", (TextBlock("a" * 800),)))
    return messages


def prepare_once(history: Sequence[Message]) -> None:
    visible = mask_tool_results(
        history, keep_rounds=POLICY.keep_tool_rounds, over_chars=POLICY.mask_tool_results_over
    )
    sizes = measure(visible)
    cut = choose_cut(sizes, keep_recent_turns=POLICY.keep_recent_turns, room_chars=400_000)
    with_summary("a summary", visible[cut or 0 :])


def legacy_trim(messages: Sequence[Message], budget_tokens: int) -> list[Message]:
    """0.x's trim_history: re-estimates the whole kept list after every dropped turn."""
    starts = [i for i, m in enumerate(messages) if m.role == "user" and m.text]
    kept = list(messages)
    estimate = sum(message_chars(m) for m in kept) // 4
    for start in starts[1:]:
        if estimate <= budget_tokens:
            break
        kept = list(messages[start:])
        estimate = sum(message_chars(m) for m in kept) // 4
    return kept


def median_time(func: object, *args: object, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        func(*args)  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def terse_answer(request: ModelRequest) -> Reply:
    if any(SUMMARY_INSTRUCTIONS in part.text for part in request.system):
        return [Say("The person asked many numbered questions.")]
    return [Say("ok")]


async def stall_probe(stop: anyio.Event, worst: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await anyio.sleep(0.001)
        worst[0] = max(worst[0], time.perf_counter() - started - 0.001)


async def streamer(runtime: Runtime, stop: anyio.Event) -> None:
    session = await runtime.create_session("a", CALLER)
    while not stop.is_set():
        async for _event in runtime.run_turn_streaming(TurnRequest(session.id, CALLER, "go")):
            pass


async def measure_size(turns: int) -> str:
    history = conversation(turns)
    prepare = median_time(prepare_once, history)
    legacy = "—"
    if turns <= 2000:
        legacy = f"{median_time(legacy_trim, history, 160_000, repeats=1) * 1e3:9.1f} ms"
    with tempfile.TemporaryDirectory() as folder:
        async with await Database.open(Path(folder) / "bench.db") as db:
            store = SqliteSessionStore(db)
            streamers = ScriptedProvider(default=lambda _r: [Say(*["w "] * 40, delay=0.005)])
            runtime = Runtime(
                catalog=CATALOG,
                store=store,
                provider=ScriptedProvider(default=terse_answer),
                settings=RuntimeSettings("m", compaction=POLICY),
            )
            others = Runtime(
                catalog=CATALOG, store=store, provider=streamers, settings=RuntimeSettings("m")
            )
            async with runtime, others:
                session = (await runtime.create_session("a", CALLER)).id
                await store.commit_turn(session, history, TokenUsage(), datetime.now(UTC))
                # The boundary a summary of all but the last six turns would have.
                boundary = max(0, len(history) - 6 * 3)
                while not history[boundary].text.startswith("question"):
                    boundary += 1
                # A daemon does not hold the whole history in memory; neither do we now
                # (its objects would make every garbage collection slow).
                del history
                gc.collect()
                request = TurnRequest(session, CALLER, "one more")

                # The first compaction, while other conversations stream.
                # Baseline: the same probe while only the others stream, for as long.
                stop, worst, idle = anyio.Event(), [0.0], [0.0]
                async with anyio.create_task_group() as group:
                    for _ in range(20):
                        group.start_soon(streamer, others, stop)
                    await anyio.sleep(0.05)
                    probe_stop = anyio.Event()
                    group.start_soon(stall_probe, probe_stop, idle)
                    await anyio.sleep(0.3)
                    probe_stop.set()
                    group.start_soon(stall_probe, stop, worst)
                    await anyio.sleep(0.02)
                    started = time.perf_counter()
                    result = await runtime.run_turn(request)
                    first = time.perf_counter() - started
                    await anyio.sleep(0.02)
                    stop.set()
                assert result.ok, result.terminal

                # Steady state: the summary covers all but the last six turns.
                await store.save_context(session, ContextState("A summary.", boundary, 0, 0))
                times = []
                for _ in range(5):
                    started = time.perf_counter()
                    assert (await runtime.run_turn(request)).ok
                    times.append(time.perf_counter() - started)
                summarized = statistics.median(times)
    return (
        f"{turns:>7,} {prepare * 1e3:9.2f} ms {legacy:>12} {summarized * 1e3:9.2f} ms"
        f" {first * 1e3:9.1f} ms {worst[0] * 1e3:9.2f} ms {idle[0] * 1e3:9.2f} ms"
    )


async def history_report(sizes: Sequence[int]) -> None:
    print(
        f"\n{'turns':>7} {'prepare':>12} {'0.x trim':>12} {'turn, summ.':>12}"
        f" {'turn, 1st':>12} {'max stall':>12} {'(baseline)':>12}"
    )
    for turns in sizes:
        print(await measure_size(turns))
    print(
        "\nprepare = mask + size + cut over the whole history in memory (no summary yet);"
        "\nturn, summ. = a whole SQLite turn when a summary covers all but 6 turns;"
        "\nturn, 1st = the turn that makes the first summary (load capped at 4 windows);"
        "\nmax stall = longest event-loop lateness during that turn, 20 others streaming;"
        "\n(baseline) = the same probe for 0.3 s while only the 20 others stream."
    )


def cli(argv: list[str] | None = None, runner: Callable[..., None] = anyio.run) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--history", type=int, nargs="*", default=[1000, 10_000, 50_000])
    args = parser.parse_args(argv)
    runner(main, args.deltas, args.turns, args.history)


if __name__ == "__main__":
    cli()
