"""Memory latency at growing record counts, and recall quality on the labelled set.

    python bench/memory.py [--sizes 1000 10000 100000] [--samples 300] [--owners 4]
                           [--embedder wordllama|none|local:PATH]
    python bench/memory.py --quality [--embedder wordllama|local:PATH]

``--quality`` prints recall@1, recall@5 and MRR on ``tests/memory/recall_set.json`` for
BM25 alone, vectors alone and hybrid (per query kind), then the fusion alternatives.

For each size a fresh SQLite file (WAL, as the daemon uses it) is bulk-loaded with
synthetic but varied memories spread over ``--owners`` owners, then ``--samples`` timed
calls of each kind run for the first owner:

- ``remember``: ``MemoryStore.remember`` of a new sentence (embedding, dedupe search by
  words and by vector, insert),
- ``recall``: ``MemoryStore.recall`` of a user-like message (embedding the query, BM25 and
  vector search, fusion; top 5, stamping recall time),
- ``auto-recall``: the prompt contributor (recall + block rendering + stamping),
- ``hard delete``: ``MemoryStore.delete`` of ``DELETES`` records picked at random from
  the owner's (row, FTS5 shard merge, secure delete, checkpoint).

RSS is the process's resident memory after loading and after the timed calls (the
vector mirror included); the figure for the mirror itself is printed too.

Figures are wall-clock milliseconds (p50 / p95) in this process; compare sizes with each
other, not across machines.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio

from bench.memory_embedders import HELP, make_embedder
from thalos_bot.domain.agents import AgentDefinition, MemoryPolicy
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.memory.recall import MemoryRecall
from thalos_bot.memory.records import KINDS, NewMemory, new_memory
from thalos_bot.memory.reindex import Reindexer
from thalos_bot.memory.schema import with_memory
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.vectors import VectorIndex
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
DELETES = 40
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


def rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run_size(size: int, samples: int, owners: int, folder: Path, embedder: str) -> None:
    rng = random.Random(size)
    path = folder / f"memory-{size}.db"
    async with await Database.open(path, migrations=with_memory()) as db:
        chosen = make_embedder(embedder)
        vectors = VectorIndex(chosen) if chosen is not None else None
        store = MemoryStore(db, vectors=vectors)
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
        embed_s = 0.0
        if vectors is not None:
            start = time.perf_counter()
            await Reindexer(db, vectors, batch=2048).reindex(pending_only=True)
            embed_s = time.perf_counter() - start
        files = [path, path.with_name(path.name + "-wal")]
        megabytes = sum(f.stat().st_size for f in files if f.exists()) / 1e6
        print(
            f"\n{size:,} records ({owners} owners, embedder {embedder}): loaded in {load_s:.1f} s,"
            f" embedded in {embed_s:.1f} s, {megabytes:.1f} MB on disk, RSS {rss_mb():.0f} MB"
        )

        owner = "user-0"
        await store.recall([owner], question(rng), top_k=5)  # loads the owner's vectors
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

        # Old and new records alike (each FTS shard holds its own blocks of records).
        victims = rng.sample([r.id for r in await store.list(owner, limit=size)], DELETES)
        deletes = await timed(len(victims), lambda i: store.delete(victims[i]))
        print(f"  hard delete  {figures(deletes)}")
        mirror = vectors.mirror_bytes / 1e6 if vectors is not None else 0.0
        print(f"  RSS peak {rss_mb():.0f} MB; vector mirror {mirror:.1f} MB")


async def main(sizes: list[int], samples: int, owners: int, embedder: str) -> None:
    with tempfile.TemporaryDirectory(prefix="thalos-bench-memory-") as folder:
        for size in sizes:
            await run_size(size, samples, owners, Path(folder), embedder)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--owners", type=int, default=4)
    parser.add_argument("--embedder", default="wordllama", help=HELP)
    parser.add_argument("--quality", action="store_true", help="the labelled-set table")
    options = parser.parse_args()
    configure_logging("warning", "pretty")
    if options.quality:
        from bench.memory_quality import quality

        anyio.run(quality, options.embedder)
    else:
        anyio.run(main, options.sizes, options.samples, options.owners, options.embedder)
