"""What showing and recording progress costs a long command.

    python bench/progress.py [--memories 5000] [--updates 100000]

Printed:

* one ``Progress.update`` in each mode (``off``, ``lines`` into a null file, ``bar``
  into a file that says it is a terminal): µs per call;
* a ``memory reindex`` of N memories with the embedded WordLlama model, whose every
  batch also writes the ``task_progress`` row: total seconds, and the row's writes alone
  (``ProgressBoard.advance`` as often as the reindex calls it) as a share of that.
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from pathlib import Path

import anyio
import structlog

from thalos_bot.cli.progress import Mode, Progress
from thalos_bot.memory.embedding.wordllama import WordLlamaEmbedder
from thalos_bot.memory.records import NewMemory
from thalos_bot.memory.reindex import BATCH, Reindexer
from thalos_bot.memory.store import MemoryStore
from thalos_bot.memory.vectors import VectorIndex
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.progress import ProgressBoard


class FakeTerminal(io.TextIOWrapper):
    def isatty(self) -> bool:
        return True


def per_update(mode: Mode, updates: int) -> float:
    with open(os.devnull, "w") as sink:  # noqa: PTH123 - a plain sink
        stream = FakeTerminal(sink.buffer) if mode == "bar" else sink
        progress = Progress("bench", updates, mode=mode, stream=stream)
        start = time.perf_counter()
        for done in range(1, updates + 1):
            progress.update(done)
        spent = time.perf_counter() - start
        progress.close()
        stream.flush()
    return spent / updates * 1e6


async def reindex(count: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "thalos.db"
        async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
            memories = (
                NewMemory("alice", f"Fact {n} about the {n % 11} garden") for n in range(count)
            )
            await MemoryStore(db).insert_many(memories)
            reindexer = Reindexer(db, VectorIndex(WordLlamaEmbedder()))
            start = time.perf_counter()
            await reindexer.reindex(pending_only=False)
            total = time.perf_counter() - start
            board = ProgressBoard(db, "bench")
            await board.begin(count)
            start = time.perf_counter()
            for done in range(BATCH, count + BATCH, BATCH):
                await board.advance(min(done, count), count)
            writes = time.perf_counter() - start
    return total, writes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--updates", type=int, default=100_000)
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    for mode in ("off", "lines", "bar"):
        print(f"Progress.update, {mode:5}: {per_update(mode, args.updates):6.2f} µs per call")
    total, writes = anyio.run(reindex, args.memories)
    print(
        f"reindex of {args.memories:,} memories: {total:.2f} s; its task_progress writes"
        f" {writes * 1000:.1f} ms ({writes / total:.1%})"
    )


if __name__ == "__main__":
    main()
