"""Memory latency: remember (with its dedupe search) and recall (FTS5 + BM25), at growing
record counts.

    python bench/memory.py [--sizes 1000 10000 100000] [--samples 300] [--owners 4]

For each size a fresh SQLite file (WAL, as the daemon uses it) is bulk-loaded with
synthetic but varied memories spread over ``--owners`` owners, then ``--samples`` timed
calls of each kind run for the first owner:

- ``remember``: ``MemoryStore.remember`` of a new sentence (dedupe search + insert),
- ``recall``: ``MemoryStore.recall`` of a user-like message (top 5, stamping recall time),
- ``auto-recall``: the prompt contributor (recall + block rendering + stamping),
- ``hard delete``: ``MemoryStore.delete`` (row, FTS5 merge, secure delete, checkpoint).

Figures are wall-clock milliseconds (p50 / p95) in this process; compare sizes with each
other, not across machines.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio

from thalos_bot.domain.agents import AgentDefinition, MemoryPolicy
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.memory.recall import MemoryRecall
from thalos_bot.memory.records import KINDS, NewMemory, new_memory
from thalos_bot.memory.schema import with_memory
from thalos_bot.memory.store import MemoryStore
from thalos_bot.storage.database import Database
from thalos_bot.telemetry.logging import configure_logging

SUBJECTS = [
    "Sam",
    "The user",
    "Their partner",
    "Their daughter",
    "The manager",
    "The team",
    "Their brother",
    "The landlord",
    "The client",
    "Their mother",
    "The doctor",
    "The dog",
]
VERBS = [
    "prefers",
    "dislikes",
    "decided on",
    "is learning",
    "booked",
    "forgot",
    "needs",
    "recommended",
    "bought",
    "cancelled",
    "scheduled",
    "asked about",
    "is allergic to",
    "wants to try",
    "switched to",
    "keeps",
    "moved",
    "paid for",
    "reviewed",
    "planned",
]
OBJECTS = [
    "black coffee",
    "green tea",
    "the dentist appointment",
    "a window seat",
    "dark mode",
    "metric units",
    "the kitchen renovation",
    "the half marathon",
    "Japanese lessons",
    "the quarterly report",
    "the mortgage renewal",
    "a standing desk",
    "the boiler service",
    "oat milk",
    "the school run",
    "the vet visit",
    "a new laptop",
    "the gym membership",
    "the flight to Lisbon",
    "the database migration",
    "the code review",
    "peanuts",
    "a ceramics class",
    "the car insurance",
    "the team offsite",
    "spicy food",
    "early meetings",
    "the budget spreadsheet",
    "the garden",
    "science fiction novels",
]
WHEN = [
    "on Mondays",
    "every morning",
    "after lunch",
    "next spring",
    "in April",
    "before 9am",
    "at weekends",
    "twice a month",
    "by the end of June",
    "every other Thursday",
    "during school holidays",
    "when travelling",
    "this year",
    "since last autumn",
    "",
]
REASONS = [
    "because it saves time",
    "for health reasons",
    "to stay under budget",
    "after a bad experience",
    "on the doctor's advice",
    "as agreed with the team",
    "to avoid the traffic",
    "since it worked well last time",
    "",
    "",
    "",
]
PLACES = [
    "in Edinburgh",
    "at the office",
    "at home",
    "in Leith",
    "near the station",
    "at the clinic",
    "online",
    "in Lisbon",
    "at the cafe on the corner",
    "",
]
SYLLABLES = ["ka", "lo", "mi", "ren", "sa", "tor", "vel", "qu", "dan", "fi", "zo", "ber"]


def rare_word(rng: random.Random) -> str:
    """A made-up name, so the vocabulary has the long tail real notes have."""
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))).capitalize()


def sentence(rng: random.Random) -> str:
    parts = [
        rng.choice(SUBJECTS),
        rng.choice(VERBS),
        rng.choice(OBJECTS),
        rng.choice(WHEN),
        rng.choice(PLACES),
        rng.choice(REASONS),
    ]
    if rng.random() < 0.6:
        parts.append(f"(ask {rare_word(rng)} about it)")
    if rng.random() < 0.3:
        parts.append(f"reference {rng.randint(100, 99_999)}")
    return " ".join(p for p in parts if p) + "."


def memories(rng: random.Random, count: int, owners: int) -> Iterator[NewMemory]:
    for i in range(count):
        yield new_memory(
            f"user-{i % owners}",
            sentence(rng),
            kind=rng.choice(KINDS),
            tags=rng.sample(["home", "work", "health", "family", "money", "travel"], 2),
            importance=rng.randint(1, 5),
        )


def question(rng: random.Random) -> str:
    return (
        f"Can you remind me what {rng.choice(SUBJECTS).lower()} said about "
        f"{rng.choice(OBJECTS)} {rng.choice(WHEN)}?"
    )


async def timed(samples: int, action: Callable[[int], Awaitable[object]]) -> list[float]:
    times: list[float] = []
    for i in range(samples):
        start = time.perf_counter()
        await action(i)
        times.append((time.perf_counter() - start) * 1000)
    return times


def figures(times: list[float]) -> str:
    cuts = statistics.quantiles(times, n=20)
    return f"p50 {statistics.median(times):7.2f} ms   p95 {cuts[18]:7.2f} ms"


async def run_size(size: int, samples: int, owners: int, folder: Path) -> None:
    rng = random.Random(size)
    path = folder / f"memory-{size}.db"
    async with await Database.open(path, migrations=with_memory()) as db:
        store = MemoryStore(db)
        start = time.perf_counter()
        batch: list[NewMemory] = []
        for memory in memories(rng, size, owners):
            batch.append(memory)
            if len(batch) == 5000:
                await store.insert_many(batch)
                batch = []
        if batch:
            await store.insert_many(batch)
        load_s = time.perf_counter() - start
        files = [path, path.with_name(path.name + "-wal")]
        megabytes = sum(f.stat().st_size for f in files if f.exists()) / 1e6
        print(f"\n{size:,} records ({owners} owners): loaded in {load_s:.1f} s, {megabytes:.1f} MB")

        owner = "user-0"
        remember = await timed(samples, lambda _: store.remember(owner, sentence(rng)))
        print(f"  remember     {figures(remember)}")
        recall = await timed(samples, lambda _: store.recall([owner], question(rng), top_k=5))
        print(f"  recall       {figures(recall)}")

        agent = AgentDefinition(
            AgentId("bench"), "Bench", "", "", memory=MemoryPolicy(enabled=True)
        )
        contributor = MemoryRecall(store)
        caller = SecurityContext.of(owner)
        auto = await timed(
            samples,
            lambda _: contributor.contribute(agent, caller, SessionId("s_bench"), question(rng)),
        )
        print(f"  auto-recall  {figures(auto)}")

        victims = [r.id for r in await store.list(owner, limit=10)]
        deletes = await timed(len(victims), lambda i: store.delete(victims[i]))
        print(f"  hard delete  {figures(deletes)}")


async def main(sizes: list[int], samples: int, owners: int) -> None:
    with tempfile.TemporaryDirectory(prefix="thalos-bench-memory-") as folder:
        for size in sizes:
            await run_size(size, samples, owners, Path(folder))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--owners", type=int, default=4)
    options = parser.parse_args()
    configure_logging("warning", "pretty")
    anyio.run(main, options.sizes, options.samples, options.owners)
