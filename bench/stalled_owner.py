"""How long a standby waits to take a connection over from an owner stopped (SIGSTOP,
a frozen VM) in the middle of a write fenced by its lease.

Such a write holds the lease's row ``FOR SHARE`` until its transaction ends, and the
standby's takeover waits for that lock. The server ends a transaction waiting on its
client after ``stalled_transaction`` seconds (``idle_in_transaction_session_timeout``,
:data:`thalos_bot.storage.pg.database.STALLED_TRANSACTION_S`); with it unbounded (as
before), the takeover waits as long as the owner is stopped, here cut at ``--cap``.

The owner's stop is modelled as a transaction that stops sending (to the server the
same: a client gone quiet mid-transaction), on a real PostgreSQL with the default
``connection_lease`` (4 s) and the standby trying every second, as the daemon does.

Run: ``python bench/stalled_owner.py [--runs 5] [--cap 30]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/: its telegram.py would shadow the library

from tests.storage.postgres import start_server  # noqa: E402
from thalos_bot.cluster.connections import ConnectionLease  # noqa: E402
from thalos_bot.service.schema import PG_ALL_MIGRATIONS  # noqa: E402
from thalos_bot.storage.pg.database import STALLED_TRANSACTION_S, PgDatabase  # noqa: E402

LEASE = 4.0
"""``[storage] connection_lease``'s default."""


async def takeover(url: str, run: int, stalled_transaction: float, cap: float) -> float | None:
    """Seconds from the owner's stop to the standby holding the lease (None: past cap)."""
    async with await PgDatabase.open(
        url, migrations=PG_ALL_MIGRATIONS, stalled_transaction=stalled_transaction
    ) as db:
        channel = f"bench-{run}-{stalled_transaction}"
        owner = ConnectionLease(db, channel, "owner", LEASE)
        standby = ConnectionLease(db, channel, "standby", LEASE)
        assert await owner.acquire()
        locked, woke = anyio.Event(), anyio.Event()

        async def stopped_mid_write() -> None:
            try:
                async with db.transaction() as conn:
                    await conn.execute(
                        "SELECT token FROM connection_leases WHERE channel_id = %s FOR SHARE",
                        (channel,),
                    )
                    locked.set()
                    await woke.wait()
            except psycopg.Error:
                pass  # ended by the server: the write is refused

        taken: float | None = None
        async with anyio.create_task_group() as group:
            group.start_soon(stopped_mid_write)
            await locked.wait()
            began = time.monotonic()
            with anyio.move_on_after(cap):
                while not await standby.acquire():  # noqa: ASYNC110 - the daemon polls so
                    await anyio.sleep(standby.poll_every)
                taken = time.monotonic() - began
            woke.set()
        return taken


def said(values: list[float | None], cap: float) -> str:
    done = [v for v in values if v is not None]
    if len(done) < len(values):
        return f"not taken over within {cap:.0f} s in {len(values) - len(done)} of {len(values)}"
    return f"median {statistics.median(done):.2f} s ({min(done):.2f}-{max(done):.2f} s)"


async def main(runs: int, cap: float) -> None:
    server = start_server()
    try:
        with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
        url = server.url("bench")
        bounded = [await takeover(url, run, STALLED_TRANSACTION_S, cap) for run in range(runs)]
        unbounded = [await takeover(url, runs, 24 * 3600.0, cap)]
    finally:
        server.stop()
    print(f"connection_lease {LEASE:.0f} s, the standby trying every second, {runs} runs")
    print(f"  stalled_transaction {STALLED_TRANSACTION_S:.0f} s: {said(bounded, cap)}")
    print(f"  unbounded (before):       {said(unbounded, cap)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cap", type=float, default=30.0)
    arguments = parser.parse_args()
    anyio.run(main, arguments.runs, arguments.cap)
