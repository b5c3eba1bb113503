"""What streaming an answer into the web page costs the pump: how long each delivery of
a flush takes to return (the page shows it by then), and the events the page gets.

    python bench/web_stream.py [--flushes 400] [--answers 20]

One in-process web adapter with its delivery engine and its events in a SQLite file
(written and read back by its relay), as the plug-in runs it. Each answer is a turn of
``--flushes`` text updates (a word each), then its final. Printed: the median, p90 and
max of one flush's delivery, the median of the final's (it returns once the final is in
the database), the mean of a whole answer, and the events appended per answer (turn,
partials, final).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/: its telegram.py would shadow the library

from tests.web.seats import owner_seats  # noqa: E402
from thalos_bot.channels.ports import TextUpdate, TurnStarted  # noqa: E402
from thalos_bot.domain.events import TokenUsage, TurnCompleted  # noqa: E402
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId  # noqa: E402
from thalos_bot.service.schema import ALL_MIGRATIONS  # noqa: E402
from thalos_bot.storage.database import Database  # noqa: E402
from thalos_bot.storage.web_events import SqlitePageEvents  # noqa: E402
from thalos_bot_web.adapter import WebAdapter  # noqa: E402
from thalos_bot_web.wire import page_engine  # noqa: E402

OWNER = ConversationId("owner")


async def measure(
    folder: Path, flushes: int, answers: int
) -> tuple[list[float], list[float], list[float], int]:
    async with await Database.open(folder / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        return await _measure(SqlitePageEvents(db), flushes, answers)


async def _measure(
    store: SqlitePageEvents, flushes: int, answers: int
) -> tuple[list[float], list[float], list[float], int]:
    adapter = WebAdapter(
        ChannelId("web"),
        flush_interval=0.05,
        keep_events=500,
        seats=owner_seats(OWNER),
        store=store,
    )
    each: list[float] = []
    finals: list[float] = []
    whole: list[float] = []
    async with anyio.create_task_group() as group:
        adapter.engine = page_engine(adapter, group)
        group.start_soon(adapter.relay.run)
        for _ in range(answers):
            started = time.perf_counter()
            await adapter.deliver(OWNER, TurnStarted())
            text = ""
            for n in range(flushes):
                word = f"word{n} "
                text += word
                at = time.perf_counter()
                await adapter.deliver(OWNER, TextUpdate(word))
                each.append(time.perf_counter() - at)
            done = TurnCompleted(SessionId("s"), text, TokenUsage(), (), 0.1)
            at = time.perf_counter()
            await adapter.deliver(OWNER, done)
            finals.append(time.perf_counter() - at)
            whole.append(time.perf_counter() - started)
        await adapter.relay.written()
        group.cancel_scope.cancel()
    return each, finals, whole, adapter.timeline(OWNER).last_serial // answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flushes", type=int, default=400)
    parser.add_argument("--answers", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        each, finals, whole, events = anyio.run(measure, Path(folder), args.flushes, args.answers)
    ms = [s * 1000 for s in each]
    deciles = statistics.quantiles(ms, n=10)
    median, p90 = statistics.median(ms), deciles[-1]
    print(f"one flush delivered: median {median:.3f} ms, p90 {p90:.3f} ms, max {max(ms):.3f} ms")
    print(f"its final delivered: median {statistics.median(finals) * 1000:.3f} ms")
    print(f"one answer of {args.flushes} flushes: mean {statistics.mean(whole) * 1000:.1f} ms")
    print(f"events per answer: {events}")


if __name__ == "__main__":
    main()
