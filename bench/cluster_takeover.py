"""Replicas: how long a platform connection is gone when its owner dies or stops.

    python bench/cluster_takeover.py [--runs 5] [--lease 4]

Starts a throwaway PostgreSQL and the Discord fake, then three ``thalos-bot run``
replicas with Discord enabled on each (only the holder of the connection lease opens
the gateway). Each run kills the owner with SIGKILL, measures until another replica's
gateway session is up again (``takeover``) and until a DM sent then is answered
(``answered``, from the kill), checks it was answered once, and starts a replacement
replica. Then as many runs stop the owner cleanly (SIGTERM: it releases the lease) and
measure the same from the signal. Printed: median, min and max of each.
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

from tests.cluster.connection_daemons import Discords, running_discords  # noqa: E402
from tests.fakes.discord_api import DiscordFake  # noqa: E402
from tests.storage.postgres import start_server  # noqa: E402
from thalos_bot.cluster.connections import DEFAULT_SPAN  # noqa: E402


def summary(name: str, values: list[float]) -> str:
    return (
        f"{name}: median {statistics.median(values):.2f} s"
        f" (min {min(values):.2f}, max {max(values):.2f}, {len(values)} runs)"
    )


async def one(cluster: Discords, run: int, *, kill: bool) -> tuple[float, float]:
    owner = await cluster.owner()
    began = time.monotonic()
    if kill:
        owner.kill()
    else:
        await owner.terminate()
    await cluster.owner(timeout=120, gone=(owner,))
    takeover = time.monotonic() - began
    text = f"{'kill' if kill else 'stop'} {run}"
    await cluster.say(text, timeout=60)
    answered = time.monotonic() - began
    await anyio.sleep(1.0)
    twice = cluster.answers(text)
    if twice != 1:
        raise SystemExit(f"{text!r} answered {twice} times")
    cluster.replicas.remove(owner)
    await cluster.add()
    return takeover, answered


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lease", type=float, default=DEFAULT_SPAN)
    args = parser.parse_args()
    server = start_server()
    try:
        server.create_database("takeover")
        with DiscordFake() as fake, tempfile.TemporaryDirectory() as tmp:
            async with running_discords(
                fake, server.url("takeover"), Path(tmp), 3, lease=args.lease
            ) as cluster:
                await cluster.say("warm up", timeout=60)
                for kill in (True, False):
                    times = [await one(cluster, run, kill=kill) for run in range(args.runs)]
                    what = "kill -9" if kill else "clean stop"
                    print(f"lease {args.lease:g} s, {what} of the Discord connection's owner:")
                    print("  " + summary("gateway up again", [t for t, _ in times]))
                    print("  " + summary("next DM answered", [a for _, a in times]))
    finally:
        server.stop()


if __name__ == "__main__":
    anyio.run(main)
