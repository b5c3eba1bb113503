"""Replicas: how long an event written for a page on one replica takes to reach the
page's timeline on another (the web channel's relay over the shared store).

    python bench/web_relay.py [--runs 30]

Starts a throwaway PostgreSQL and two web adapters, each with its relay, standing for
two replicas: the first writes (``Relay.run``), the second follows (``Relay.follow``,
as the plug-in runs it). Each run waits a random 0.05-0.3 s (so a polling reader is met
at any point of its period), emits a notice on the first and measures until it is in
the second's timeline. Printed: median, p90, min and max.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/: its telegram.py would shadow the library

from tests.storage.postgres import start_server  # noqa: E402
from tests.web.seats import owner_seats  # noqa: E402
from thalos_bot.cluster.page_events import PgPageEvents  # noqa: E402
from thalos_bot.domain.ids import ChannelId, ConversationId  # noqa: E402
from thalos_bot.service.schema import PG_ALL_MIGRATIONS  # noqa: E402
from thalos_bot.storage.pg.database import PgDatabase  # noqa: E402
from thalos_bot_web.adapter import WebAdapter  # noqa: E402
from thalos_bot_web.relay import Relay  # noqa: E402

OWNER = ConversationId("owner")
BOUND_S = 30.0


def replica(db: PgDatabase) -> tuple[WebAdapter, Relay]:
    adapter = WebAdapter(
        ChannelId("web"),
        flush_interval=0.05,
        keep_events=50,
        seats=owner_seats(OWNER),
        store=PgPageEvents(db),
    )
    return adapter, adapter.relay


async def arrived(adapter: WebAdapter, text: str) -> None:
    """Until the owner's timeline on ``adapter`` has the notice ``text``."""
    timeline = adapter.timeline(OWNER)
    while True:
        changed = timeline.waiter()  # taken before reading: nothing slips between
        if any(e.data.get("html") == text for e in timeline.events()):
            return
        await changed.wait()


async def measure(url: str, runs: int) -> list[float]:
    async with await PgDatabase.open(url, migrations=PG_ALL_MIGRATIONS) as db:
        a, relay_a = replica(db)
        b, relay_b = replica(db)
        b.timeline(OWNER)  # a tab of the owner is open on b
        figures: list[float] = []
        async with anyio.create_task_group() as group:
            group.start_soon(relay_a.run)
            group.start_soon(relay_b.follow)
            await anyio.sleep(1.0)  # settled (listening, if it listens)
            for n in range(runs):
                await anyio.sleep(random.uniform(0.05, 0.3))
                text = f"n{n}"
                started = time.perf_counter()
                a.notice(OWNER, text)
                with anyio.fail_after(BOUND_S):
                    await arrived(b, text)
                figures.append(time.perf_counter() - started)
            group.cancel_scope.cancel()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    server = start_server()
    try:
        server.create_database("relay")
        figures = anyio.run(measure, server.url("relay"), args.runs)
    finally:
        server.stop()
    ms = sorted(f * 1000 for f in figures)
    p90 = ms[int(0.9 * (len(ms) - 1))]
    print(
        f"cross-replica event: median {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms"
        f" (min {ms[0]:.1f}, max {ms[-1]:.1f}, {len(ms)} runs)"
    )


if __name__ == "__main__":
    main()
