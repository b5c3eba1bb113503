"""Replicas: what the shared rate limit adds to a request, against the local one.

    python bench/shared_rate.py [--replicas 3] [--addresses 50] [--requests 40]
        [--concurrency 8] [--fast-disk]

Starts a throwaway PostgreSQL (durable, as in production: ``fsync`` and
``synchronous_commit`` on, unless ``--fast-disk``) and a pool per replica, then times
the limiter's decision for each request (``wait``), with the listener's defaults
(1,200 a minute, burst 200), in four ways:

1. local: each process's own buckets (SQLite, one daemon; today's per-replica count);
2. shared, batched: the shipped limiter, its requests spread round-robin over the
   replicas (``--addresses`` addresses, ``--requests`` each, ``--concurrency`` at once);
3. shared, one UPSERT per request: what counting every request in the store would pay
   (the same statement, a draw per request), for comparison;
4. a flood past the limit on the shared limiter: what a refused request pays.

Printed: p50, p99 and max per request, and the round trips made.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import psycopg
import structlog

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/: its telegram.py would shadow the library

from tests.storage.postgres import start_server  # noqa: E402
from thalos_bot.channels.listeners.rate import RateLimiter  # noqa: E402
from thalos_bot.channels.listeners.shared_rate import SharedRate  # noqa: E402
from thalos_bot.cluster.rate_buckets import PgRateBuckets  # noqa: E402
from thalos_bot.service.schema import PG_ALL_MIGRATIONS  # noqa: E402
from thalos_bot.storage.pg.database import PgDatabase  # noqa: E402

PER_MINUTE = 1200
BURST = 200

Wait = Callable[[str], Awaitable[float]]


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def line(label: str, samples: list[float], trips: int | None) -> str:
    ms = [s * 1000 for s in samples]
    said = f"{label:<34} p50 {percentile(ms, 0.5):7.3f} ms  p99 {percentile(ms, 0.99):7.3f} ms"
    said += f"  max {max(ms):7.2f} ms"
    if trips is not None:
        said += f"  {trips} round trips for {len(ms)} requests"
    return said


async def timed(waits: list[Wait], args: argparse.Namespace, prefix: str) -> list[float]:
    """Every address's requests, round-robin over ``waits`` (the replicas)."""
    samples: list[float] = []
    jobs = [(f"{prefix}{a}", n) for n in range(args.requests) for a in range(args.addresses)]
    sem = anyio.Semaphore(args.concurrency)

    async def one(index: int, address: str) -> None:
        async with sem:
            began = time.perf_counter()
            await waits[index % len(waits)](address)
            samples.append(time.perf_counter() - began)

    async with anyio.create_task_group() as group:
        for index, (address, _) in enumerate(jobs):
            group.start_soon(one, index, address)
    return samples


async def measure(url: str, args: argparse.Namespace) -> None:
    pools = [await PgDatabase.open(url, migrations=PG_ALL_MIGRATIONS)]
    pools += [await PgDatabase.open(url) for _ in range(args.replicas - 1)]
    try:
        locals_ = [RateLimiter(PER_MINUTE, BURST) for _ in pools]
        local = await timed([lim.wait for lim in locals_], args, "l")
        print(line("local (per process)", local, None))

        limiters = [
            SharedRate(PgRateBuckets(db), "bench", PER_MINUTE, BURST, RateLimiter(1, 1).take)
            for db in pools
        ]
        batched = await timed([lim.wait for lim in limiters], args, "b")
        trips = sum(lim.draws for lim in limiters)
        print(line(f"shared, batched ({args.replicas} replicas)", batched, trips))

        buckets = [PgRateBuckets(db) for db in pools]

        def upsert(store: PgRateBuckets) -> Wait:
            async def wait(key: str) -> float:
                drawn = await store.draw("each", key, PER_MINUTE, 1)  # one token a draw
                return 0.0 if drawn.granted else 1.0

            return wait

        each = await timed([upsert(store) for store in buckets], args, "u")
        print(line("shared, one UPSERT per request", each, len(each)))

        flood = SharedRate(PgRateBuckets(pools[0]), "flood", 60, 5, RateLimiter(1, 1).take)
        for _ in range(5):
            await flood.wait("10.9.9.9")
        before = flood.draws
        refused: list[float] = []
        for _ in range(args.addresses * args.requests):
            began = time.perf_counter()
            assert await flood.wait("10.9.9.9") > 0
            refused.append(time.perf_counter() - began)
        print(line("shared, a flood past the limit", refused, flood.draws - before))
        added = (percentile(batched, 0.99) - percentile(local, 0.99)) * 1000
        print(f"p99 added by the shared limit (batched): {added:.3f} ms")
    finally:
        for db in pools:
            await db.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--addresses", type=int, default=50)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--fast-disk", action="store_true", help="leave fsync off")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    server = start_server()
    try:
        server.create_database("rates")
        url = server.url("rates")
        if not args.fast_disk:  # the test server runs without them; production does not
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("ALTER SYSTEM SET fsync = on")
                conn.execute("ALTER SYSTEM SET synchronous_commit = on")
                conn.execute("SELECT pg_reload_conf()")
        print(
            f"{args.addresses} addresses x {args.requests} requests, {args.concurrency} at once,"
            f" limit {PER_MINUTE}/min burst {BURST}"
        )
        anyio.run(measure, url, args)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
