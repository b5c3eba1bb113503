"""What keeping the chats' highest message ids costs (see thalos_bot.channels.delivery.markbook).

    python bench/chat_marks.py [--writes 300]

Printed, on a database file in a temporary directory (WAL, as the daemon opens it):

* one raised mark written (what the sender waits for after each new message of the
  bot's): p50 / p99 ms, against an outbox row's journal save on the same database (what
  it already waits for before each final part), as the baseline;
* one write of 100 chats' marks (a batch of updates from many chats);
* a flush with nothing raised (every other call the sender makes): µs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import anyio
import structlog

from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database
from thalos_bot.storage.outbox import SqliteOutbox
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry

TG = ChannelId("telegram")


async def timed(times: int, call: Callable[[int], Awaitable[None]]) -> list[float]:
    spent = []
    for i in range(times):
        start = time.perf_counter()
        await call(i)
        spent.append((time.perf_counter() - start) * 1000)
    return spent


def line(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return f"{name:<38} p50 {statistics.median(ms):7.3f} ms   p99 {p99:7.3f} ms"


async def main(writes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with await Database.open(Path(tmp) / "thalos.db", migrations=ALL_MIGRATIONS) as db:
            marks = SqliteChatMarks(db)
            book = MarkBook(marks, TG)
            outbox = SqliteOutbox(db)
            now = datetime.now(UTC)
            entry = OutboxEntry(OutboxAddress(TG, ConversationId("42"), "out-bench"), "text")
            await outbox.add(entry, now)

            async def raise_one(i: int) -> None:
                book.note("42", i + 1)
                await book.flush()

            async def journal(i: int) -> None:
                await outbox.save_progress("out-bench", {"parts_done": i, "floor": i}, now)

            async def batch(i: int) -> None:
                await marks.raise_marks(TG, {str(c): 1000 * (i + 1) + c for c in range(100)})

            async def idle(i: int) -> None:
                await book.flush()

            one = await timed(writes, raise_one)
            base = await timed(writes, journal)
            many = await timed(max(10, writes // 10), batch)
            nothing = await timed(writes, idle)
    print(line("one raised mark (bot's message)", one))
    print(line("baseline: outbox journal save", base))
    ratio = statistics.median(one) / statistics.median(base)
    print(f"{'ratio mark / journal save (p50)':<38} {ratio:.2f}")
    print(line("100 chats' marks in one write", many))
    print(f"{'flush with nothing raised':<38} p50 {statistics.median(nothing) * 1000:7.1f} µs")


if __name__ == "__main__":
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=300)
    anyio.run(main, parser.parse_args().writes)
