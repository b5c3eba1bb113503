"""How storing Matrix room keys stalls the event loop, as the store grows.

    python bench/matrix_room_keys.py [--keys 20000] [--per-save 1] [--tree DIR]

The Matrix channel's encryption store (``thalos_bot_matrix.crypto_store``) is opened in
a fresh temporary state folder, and ``--keys`` Megolm room keys (made beforehand, as
libolm would from received ``m.room_key`` events) are added to it, ``--per-save`` at a
time, each batch saved as :meth:`Crypto.on_sync` does after a sync's to-device events
(one key per save is the worst case: a flood sent one sync at a time). A ticker task on
the same event loop sleeps 5 ms at a time and records how much later than asked it
woke: the longest gap is the longest stall every other channel would have felt.

Printed: the longest stall, overall and over the last tenth of the keys (when the store
is largest), with the longest over ``IDLE_FOR`` seconds of doing nothing first (what the
machine alone adds). On a busy machine a stall is mostly the scheduler's (the worker
thread and other processes taking the CPU), so also printed: the longest time the loop
thread itself spent on one save (its CPU time, :func:`time.thread_time`: pickling what
changed and handing it over) and the load average. Then the time per key (wall clock,
saves and ``fsync`` included) and the store's size on disk.

``--tree`` runs another checkout's ``thalos_bot_matrix`` (e.g. ``--tree /work/main`` for
the whole-file store before this one; give it a smaller ``--keys``: each of its saves
pickles and writes every key kept so far).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

TICK = 0.005
IDLE_FOR = 2.0
USER = "@bench:localhost"
DEVICE = "BENCHDEVICE"
ROOM = "!bench:localhost"


class Ticker:
    def __init__(self) -> None:
        self.worst = 0.0

    async def run(self) -> None:
        while True:
            before = time.perf_counter()
            await anyio.sleep(TICK)
            self.worst = max(self.worst, time.perf_counter() - before - TICK)


def _add(store: Any, session: Any) -> None:
    if hasattr(store, "add_inbound"):
        store.add_inbound(ROOM, session)
    else:  # the whole-file store: a dict, saved whole
        store.inbound[f"{ROOM}|{session.id}"] = session


async def bench(keys: int, per_save: int) -> None:
    from olm.group_session import InboundGroupSession, OutboundGroupSession

    from thalos_bot_matrix.crypto_store import CryptoStore

    sessions = [InboundGroupSession(OutboundGroupSession().session_key) for _ in range(keys)]
    with tempfile.TemporaryDirectory() as folder:
        state_dir = Path(folder)
        store = await anyio.to_thread.run_sync(CryptoStore.load, state_dir, USER, DEVICE)
        ticker = Ticker()
        tail_from = keys - max(1, keys // 10)
        head_worst = 0.0
        async with anyio.create_task_group() as group:
            group.start_soon(ticker.run)
            await anyio.sleep(0.05)
            ticker.worst = 0.0
            await anyio.sleep(IDLE_FOR)  # what the machine alone adds
            idle, ticker.worst = ticker.worst, 0.0
            started = time.perf_counter()
            own = 0.0
            for first in range(0, keys, per_save):
                for session in sessions[first : first + per_save]:
                    _add(store, session)
                if first >= tail_from and head_worst == 0.0:
                    head_worst, ticker.worst = ticker.worst, 0.0
                cpu = time.thread_time()
                await store.save()
                # The loop thread's own CPU time in the save (the worker's is not counted):
                # what the store itself holds the loop for, whatever else the machine runs.
                own = max(own, time.thread_time() - cpu)
            elapsed = time.perf_counter() - started
            await anyio.sleep(2 * TICK)
            group.cancel_scope.cancel()
        whole = max(head_worst, ticker.worst)
        size = sum(p.stat().st_size for p in (state_dir / "matrix").iterdir())
        if hasattr(store, "close"):
            store.close()
    print(f"room keys stored:        {keys} ({per_save} per save)")
    print(f"longest loop stall:      {whole * 1000:.1f} ms (idle: {idle * 1000:.1f} ms)")
    print(f"  over the last tenth:   {ticker.worst * 1000:.1f} ms")
    print(f"longest on-loop CPU of one save: {own * 1000:.2f} ms")
    print(f"load average (1 min):    {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"time per key:            {elapsed / keys * 1000:.2f} ms")
    print(f"store on disk:           {size / 1e6:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--per-save", type=int, default=1)
    parser.add_argument("--tree", type=Path, help="another checkout's code")
    args = parser.parse_args()
    if args.tree is not None:
        sys.path.insert(0, str(args.tree / "channels" / "matrix"))
    anyio.run(bench, args.keys, args.per_save)


if __name__ == "__main__":
    main()
