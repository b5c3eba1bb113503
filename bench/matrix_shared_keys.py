"""Matrix's encryption store on replicas: what a save and a takeover cost in PostgreSQL.

    python bench/matrix_shared_keys.py [--keys 2000]

A throwaway PostgreSQL (``fsync`` and ``synchronous_commit`` on, as in production) holds
the connection lease; the store (``thalos_bot_matrix.crypto_shared``) is opened on it,
and ``--keys`` Megolm room keys are added one save at a time (the worst case: one key
per sync), each sealed and written in its own fenced transaction. A ticker on the same
event loop records the longest stall (sealing runs in a worker thread). Then the store
is opened again, as the replica taking the sync loop over does: every row read, opened
and unpickled. Printed: the time per save (median and p99), the longest stall, and the
time of that opening.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import psycopg
import structlog

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/: its telegram.py would shadow the library

from tests.storage.postgres import start_server  # noqa: E402
from thalos_bot.cluster.connection_rows import PgConnectionRows  # noqa: E402
from thalos_bot.cluster.connections import ConnectionLease  # noqa: E402
from thalos_bot.service.schema import PG_ALL_MIGRATIONS  # noqa: E402
from thalos_bot.storage.pg.database import PgDatabase  # noqa: E402

USER, DEVICE, ROOM = "@bench:localhost", "BENCHDEVICE", "!bench:localhost"


async def bench(url: str, keys: int) -> None:
    from olm.group_session import InboundGroupSession, OutboundGroupSession

    from thalos_bot_matrix.crypto_shared import opened

    os.environ.setdefault("THALOS_MATRIX_PICKLE_KEY", "bench-" + "0" * 32)
    sessions = [InboundGroupSession(OutboundGroupSession().session_key) for _ in range(keys)]
    worst = 0.0

    async def tick() -> None:
        nonlocal worst
        while True:
            before = time.perf_counter()
            await anyio.sleep(0.005)
            worst = max(worst, time.perf_counter() - before - 0.005)

    async with await PgDatabase.open(url, migrations=PG_ALL_MIGRATIONS) as db:
        lease = ConnectionLease(db, "matrix", "bench:1", 60.0)
        assert await lease.acquire()
        rows = PgConnectionRows(db, lease)
        with tempfile.TemporaryDirectory() as folder:
            store = await opened(rows, Path(folder), USER, DEVICE)
            saves: list[float] = []
            async with anyio.create_task_group() as group:
                group.start_soon(tick)
                await anyio.sleep(0.05)
                worst = 0.0
                for session in sessions:
                    began = time.perf_counter()
                    store.add_inbound(ROOM, session)
                    await store.save()
                    saves.append(time.perf_counter() - began)
                group.cancel_scope.cancel()
            began = time.perf_counter()
            again = await opened(rows, Path(folder), USER, DEVICE)
            took = time.perf_counter() - began
    assert len(again.inbound) == keys
    saves.sort()
    print(f"{keys} room keys, one save each (sealed, fenced, one transaction):")
    print(f"  per save: median {statistics.median(saves) * 1000:.2f} ms,")
    p99 = saves[int(len(saves) * 0.99)] * 1000
    print(f"  p99 {p99:.2f} ms; longest loop stall {worst * 1000:.1f} ms")
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"  the takeover's opening (read, open, unpickle every row): {took:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2000)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    server = start_server()
    try:
        server.create_database("keys")
        url = server.url("keys")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET fsync = on")
            conn.execute("ALTER SYSTEM SET synchronous_commit = on")
            conn.execute("SELECT pg_reload_conf()")
        anyio.run(bench, url, args.keys)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
