"""Replicas: the webhook intake's answer time, delivery → turn taken, failover, duplicates.

    python bench/cluster.py [--rate 300] [--seconds 5] [--kills 3] [--duplicates 300]
                            [--chats 5] [--intake-only]

Starts a throwaway PostgreSQL 15 (durability off, as the tests do). Printed:

1. intake: p50/p99 of the answer to Telegram (secret check, INSERT … ON CONFLICT DO
   NOTHING, NOTIFY, commit) at ``--rate`` updates per second on one listener;
2. taken: p50/p99 from the delivery's POST to the holder handing the update to the
   pump (LISTEN/NOTIFY, lease, take in ``update_id`` order), i.e. what webhook intake adds
   before a turn starts;
3. failover: three replica processes behind HAProxy, the Telegram fake delivering;
   ``--kills`` times the holder of a chat is killed with SIGKILL mid-stream, and the
   time until that chat's next message is answered is printed (lease 5 s);
4. duplicates: ``--duplicates`` deliveries made twice across those runs, then the
   number of turns run twice and of finals shown twice or never (the invariant
   checker of tests/cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import anyio
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/: its telegram.py would shadow the library

from telegram import Update  # noqa: E402

from bench.webhook_load import update  # noqa: E402
from tests.cluster import invariants  # noqa: E402
from tests.cluster.processes import start_haproxy, start_replica  # noqa: E402
from tests.cluster.replica_main import ALLOWED_ENV  # noqa: E402
from tests.fakes.telegram_api import TelegramFake  # noqa: E402
from tests.storage.postgres import start_server  # noqa: E402
from tests.telegram.harness import fake_token  # noqa: E402
from thalos_bot.cluster.drain import InboxDrain  # noqa: E402
from thalos_bot.cluster.inbox import Inbox  # noqa: E402
from thalos_bot.cluster.leases import LeaseBook  # noqa: E402
from thalos_bot.cluster.replicas import ReplicaTable  # noqa: E402
from thalos_bot.storage.pg.database import PgDatabase  # noqa: E402
from thalos_bot_telegram import SECRET_ENV, TOKEN_ENV  # noqa: E402
from thalos_bot_telegram.webhook import lane_of, read_update  # noqa: E402
from thalos_bot_telegram.webhook_intake import SECRET_HEADER, Listener, serving  # noqa: E402

SECRET = "bench-secret"
USERS = list(range(5000, 5100))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def intake(url: str, rate: int, seconds: float, bot: int, *, taking: bool) -> None:
    async with (
        await PgDatabase.open(url, pool_size=4) as db,
        await PgDatabase.open(url, pool_size=8) as intake_db,
    ):
        inbox = Inbox(db, bot)
        listener = Listener(Inbox(intake_db, bot), SECRET, lane_of(frozenset(USERS)))
        leases = LeaseBook(db, "telegram", "bench", 15)
        posted: dict[int, float] = {}
        taken: list[float] = []
        total = int(rate * seconds)
        all_taken = anyio.Event()

        def dispatch(updates: Sequence[Update]) -> None:
            now = time.monotonic()
            taken.extend(now - posted[u.update_id] for u in updates)
            if len(taken) >= total:
                all_taken.set()

        receiver = InboxDrain(
            url=url,
            inbox=inbox,
            leases=leases,
            replicas=ReplicaTable(db, "bench", 15),
            read=partial(read_update, None),
            hand_over=dispatch,
            interrupted=lambda lane: None,
            lease_seconds=15,
        )
        answers: list[float] = []
        statuses: dict[int, int] = {}
        async with (
            serving(listener, "127.0.0.1:0") as port,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client,
            anyio.create_task_group() as group,
        ):
            if taking:
                group.start_soon(receiver.run)
                await receiver.listening.wait()

            async def post(update_id: int) -> None:
                body = update(update_id, USERS[update_id % len(USERS)])
                began = time.monotonic()
                posted[update_id] = began
                answer = await client.post("/telegram", json=body, headers={SECRET_HEADER: SECRET})
                answers.append(time.monotonic() - began)
                statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1

            start = time.monotonic()
            async with anyio.create_task_group() as posts:
                for i in range(total):
                    await anyio.sleep(max(0.0, start + i / rate - time.monotonic()))
                    posts.start_soon(post, i + 1)
            with anyio.move_on_after(30 if taking else 0):
                await all_taken.wait()
            group.cancel_scope.cancel()
        print(
            f"intake{' (+ taking)' if taking else ''}: {len(answers)} deliveries at {rate}/s: "
            f"answer p50 {pct(answers, 0.5):.1f} ms, p99 {pct(answers, 0.99):.1f} ms; "
            f"statuses {statuses}"
        )
        if not taking:
            return
        print(
            f"taken:  delivery → handed to the pump p50 {pct(taken, 0.5):.1f} ms, "
            f"p99 {pct(taken, 0.99):.1f} ms ({len(taken)}/{total} taken)"
        )


async def answered(fake: TelegramFake, chat: int, text: str) -> None:
    def shown() -> bool:
        return invariants.shown_once(fake, chat, text)

    await fake.wait_for(shown, 120)


async def streaming(fake: TelegramFake, chat: int, text: str) -> None:
    def partial() -> bool:
        return any(t.startswith(invariants.ANSWER + text[:8]) for t in fake.texts(chat))

    await fake.wait_for(partial, 60)


async def failover(url: str, kills: int, duplicates: int, chats_n: int = 5) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="thalos-bench-"))
    with TelegramFake(
        fake_token(), per_chat_interval=0.05, burst=3, global_per_second=1000
    ) as fake:
        chats = [4242 + 101 * i for i in range(chats_n)]  # talking at once
        env = {
            TOKEN_ENV: fake.token,
            SECRET_ENV: SECRET,
            ALLOWED_ENV: ",".join(str(c) for c in chats),  # every chat's user is allowed
        }
        replicas = [
            await start_replica(tmp, fake.base_url, url, lease=5, delay=0.3, env=env)
            for _ in range(3)
        ]
        haproxy = start_haproxy(tmp, [r.port for r in replicas])
        fake.webhooks.route(haproxy.base)
        sent: dict[int, list[str]] = {c: [] for c in chats}
        cut: dict[int, list[str]] = {c: [] for c in chats}
        downs: list[float] = []
        try:
            fake.webhooks.duplicate_next(duplicates)
            per_chat = max(1, duplicates // len(chats))

            async def talk(chat: int) -> None:
                for i in range(per_chat):
                    text = f"c{chat} d{i}"
                    sent[chat].append(text)
                    fake.push_text(chat, chat, text)
                    await answered(fake, chat, text)

            async with anyio.create_task_group() as group:
                for chat in chats:
                    group.start_soon(talk, chat)
            for k in range(kills):
                chat = chats[k % len(chats)]
                slow = "slow " + " ".join(f"k{k}w{i}" for i in range(10))
                sent[chat].append(slow)
                cut[chat].append(slow)
                fake.push_text(chat, chat, slow)
                await streaming(fake, chat, slow)
                pid = invariants.holder_pid(url, chat)
                victim = next(r for r in replicas if r.pid == pid)
                victim.kill()
                killed = time.monotonic()
                text = f"after kill {k}"
                sent[chat].append(text)
                fake.push_text(chat, chat, text)
                await answered(fake, chat, text)
                downs.append(time.monotonic() - killed)
                fresh = await start_replica(
                    tmp, fake.base_url, url, lease=5, delay=0.3, env=env, port=victim.port
                )
                replicas[replicas.index(victim)] = fresh
            twice = lost = 0
            for chat in chats:
                shown = invariants.finals(fake, chat)
                twice += len(shown) - len(set(shown))
                lost += sum(
                    1
                    for t in sent[chat]
                    if t not in cut[chat] and invariants.ANSWER + t not in shown
                )
            runs = sum(
                len(a) - len(set(a))
                for a in (
                    [t for r, t in invariants.history(url, c) if r == "assistant"] for c in chats
                )
            )
            made = sum(1 for a in fake.webhooks.attempts if a.duplicate)
            print(
                f"failover: {kills} kills (lease 5 s): answered again after "
                + ", ".join(f"{d:.1f}" for d in downs)
                + (f" s (max {max(downs):.1f} s)" if downs else "")
            )
            print(
                f"duplicates: {made} duplicate deliveries: {runs} turns kept twice, "
                f"{twice} finals shown twice, {lost} finals lost"
            )
        finally:
            for replica in replicas:
                replica.close()
            haproxy.stop()


async def intake_apart(url: str, rate: int, seconds: float, bot: int) -> None:
    """The intake alone in this process, its load from another (bench/webhook_load.py):
    what one replica answers Telegram, without the generator's work on its loop."""
    async with await PgDatabase.open(url, pool_size=8) as intake_db:
        listener = Listener(Inbox(intake_db, bot), SECRET, lane_of(frozenset(USERS)))
        async with serving(listener, "127.0.0.1:0") as port:
            command = [
                sys.executable,
                str(ROOT / "bench" / "webhook_load.py"),
                f"--url=http://127.0.0.1:{port}/telegram",
                f"--rate={rate}",
                f"--count={int(rate * seconds)}",
                f"--secret={SECRET}",
            ]
            done = await anyio.run_process(command, check=True)
    result = json.loads(done.stdout.decode().strip().splitlines()[-1])
    answers = [float(a) for a in result["answers"]]
    print(
        f"intake (load from another process): {len(answers)} deliveries at {rate}/s: "
        f"answer p50 {pct(answers, 0.5):.1f} ms, p99 {pct(answers, 0.99):.1f} ms; "
        f"statuses {result['statuses']}; load average {os.getloadavg()[0]:.1f}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--taking-rate", type=int, default=100)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--duplicates", type=int, default=300)
    parser.add_argument(
        "--chats", type=int, default=5, help="chats talking at once in the failover run (5)"
    )
    parser.add_argument(
        "--intake-only", action="store_true", help="only the intake, its load from another process"
    )
    args = parser.parse_args()
    server = start_server()
    try:
        server.create_database("bench")
        url = server.url("bench")
        print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        await intake_apart(url, args.rate, args.seconds, 3)
        if args.intake_only:
            return
        await intake(url, args.rate, args.seconds, 1, taking=False)
        await intake(url, args.taking_rate, args.seconds, 2, taking=True)
        server.psql("postgres", 'CREATE DATABASE "bench_failover"')
        await failover(server.url("bench_failover"), args.kills, args.duplicates, args.chats)
    finally:
        server.stop()


if __name__ == "__main__":
    anyio.run(main)
