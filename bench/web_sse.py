"""What 200 open event streams cost the web channel (see thalos_bot_web).

    python bench/web_sse.py [--clients 200] [--events 100]

A child process opens the real web channel (its plug-in, uvicorn on a loopback port)
and, every 50 ms, delivers a notice stamped with the time to one conversation. This
process connects ``--clients`` SSE streams to it (one principal: many tabs of one
conversation, the widest fan-out) and measures, for each event and each stream, the
time from delivery to arrival. Printed:

* delivery-to-arrival latency with one stream (the baseline) and with all of them,
  p50 / p99 ms, and the added p99 (all minus one);
* the server's resident memory (RSS) before any stream, and with all of them open;
* the server's CPU use while all streams read (of one core): near 100 % means the
  server is the bottleneck, well below it that the clients (or the machine) are.

The clients run in this process, so their own parsing is part of the figure. Every
phase is bounded (``PHASE_BOUND`` seconds) and the child is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

PHASE_BOUND = 60.0
GAP = 0.05


def cpu_s(pid: int) -> float:
    """User and system CPU seconds the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def serve(state: Path, events: int) -> None:
    """The child: the web channel; each line on stdin asks for that many notices."""
    import structlog

    from thalos_bot.channels.ports import Notice
    from thalos_bot.channels.registry import ChannelHost
    from thalos_bot.config.models import Settings, build_catalog
    from thalos_bot.domain.ids import ConversationId
    from thalos_bot.service.schema import ALL_MIGRATIONS
    from thalos_bot.storage.database import Database
    from thalos_bot.storage.web_events import SqlitePageEvents
    from thalos_bot.storage.web_logins import SqliteLogins
    from thalos_bot_web.config import WebConfig
    from thalos_bot_web.manifest import manifest as plugin

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    settings = Settings()
    config = WebConfig(enabled=True, listen="127.0.0.1:0", keep_events=events + 50)
    async with (
        await Database.open(state / "thalos.db", migrations=ALL_MIGRATIONS) as db,
        plugin.open(
            config,
            ChannelHost.of(
                settings,
                build_catalog(settings),
                state,
                logins=SqliteLogins(db),
                page_events=SqlitePageEvents(db),
            ),
        ) as pair,
    ):
        print(pair.describe.split("serving ", 1)[1], flush=True)
        conversation = ConversationId("owner")
        while True:
            command = await anyio.to_thread.run_sync(sys.stdin.readline)
            if not command:
                return
            for _ in range(int(command)):
                await pair.adapter.deliver(conversation, Notice(json.dumps(time.time())))
                await anyio.sleep(GAP)
            print("sent", flush=True)


async def stream(
    client: httpx.AsyncClient, wanted: int, out: list[float], ready: anyio.Event
) -> None:
    seen = 0
    async with client.stream("GET", "/api/events", timeout=PHASE_BOUND) as response:
        ready.set()
        kind = ""
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:") and kind == "notice":
                stamp = json.loads(json.loads(line[5:])["html"])
                out.append(time.time() - stamp)
                seen += 1
                if seen >= wanted:
                    return


async def phase(
    url: str,
    cookie: str,
    clients: int,
    events: int,
    *,
    child: subprocess.Popen[str],
    skip: int,
) -> tuple[list[float], float]:
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
    async with httpx.AsyncClient(
        base_url=url, cookies={"thalos_web": cookie}, limits=limits
    ) as client:
        with anyio.fail_after(PHASE_BOUND):
            async with anyio.create_task_group() as group:
                readies = [anyio.Event() for _ in range(clients)]
                for ready in readies:
                    group.start_soon(stream, client, skip + events, latencies, ready)
                for ready in readies:
                    await ready.wait()
                memory = rss_mb(child.pid)
                assert child.stdin is not None
                child.stdin.write(f"{events}\n")
                child.stdin.flush()
    # The first ``skip`` notices each stream replays are earlier phases' (kept events).
    return latencies, memory


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def main(clients: int, events: int) -> None:
    from tests.web.codes import signing_secret
    from thalos_bot_web.sessions import Sessions

    with tempfile.TemporaryDirectory() as folder:
        state = Path(folder)
        child = subprocess.Popen(  # noqa: ASYNC220 - once, before any stream is timed
            [sys.executable, __file__, "--serve", str(state), "--events", str(events * 3)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            url = child.stdout.readline().strip()
            cookie, _ = Sessions(signing_secret(state), 3600).new("owner")
            idle = rss_mb(child.pid)
            one, _ = await phase(url, cookie, 1, events, child=child, skip=0)
            child.stdout.readline()
            fresh = one[-events:]
            started, used = time.monotonic(), cpu_s(child.pid)
            many, with_all = await phase(url, cookie, clients, events, child=child, skip=events)
            child.stdout.readline()
            busy = (cpu_s(child.pid) - used) / (time.monotonic() - started)
        finally:
            if child.stdin is not None:
                child.stdin.close()
            child.wait(timeout=20)
    # Replayed (kept) notices of the first phase arrive at once with old stamps: drop them.
    many = sorted(many)[: clients * events]
    print(f"web SSE: {clients} streams, {events} events at {GAP * 1000:.0f} ms gaps")
    print(
        f"  latency, 1 stream:      p50 {pct(fresh, 0.5):6.2f} ms   p99 {pct(fresh, 0.99):6.2f} ms"
    )
    print(
        f"  latency, {clients} streams:  p50 {pct(many, 0.5):6.2f} ms   "
        f"p99 {pct(many, 0.99):6.2f} ms"
    )
    print(f"  added p99: {pct(many, 0.99) - pct(fresh, 0.99):.2f} ms")
    print(f"  server RSS: {idle:.1f} MB idle, {with_all:.1f} MB with {clients} streams open")
    print(f"  server CPU while {clients} streams read: {busy:.0%} of one core")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--events", type=int, default=100)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        anyio.run(serve, args.serve, args.events)
    else:
        os.environ.setdefault("NO_COLOR", "1")
        anyio.run(main, args.clients, args.events)
