"""Three replicas (their own processes) behind a real HAProxy, one real PostgreSQL,
the Telegram fake delivering webhooks; faults made with real signals. The invariant
checker (tests/cluster/invariants.py) reads what each chat was shown and the database.

Lease 3 s: a dead or stopped replica's chat moves on after that, never before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from tests.cluster import invariants
from tests.cluster.conftest import WEBHOOK_SECRET
from tests.cluster.processes import (
    Haproxy,
    Replica,
    start_haproxy,
    start_replica,
    start_together,
)
from tests.fakes.telegram_api import TelegramFake
from thalos_bot_telegram import SECRET_ENV, TOKEN_ENV
from thalos_bot_telegram.webhook import INTERRUPTED

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]
LEASE = 3.0
CHATS = (4242, 4343, 4444)
SLOW = "slow " + " ".join(f"w{i}" for i in range(12))


@dataclass
class Cluster:
    fake: TelegramFake
    url: str
    tmp: Path
    replicas: list[Replica]
    haproxy: Haproxy
    delay: float

    def by_pid(self, pid: int | None) -> Replica:
        found = [r for r in self.replicas if r.pid == pid]
        assert found, f"no replica holds the chat (pid {pid})"
        return found[0]

    async def holder(self, chat: int) -> Replica:
        async def held() -> int | None:
            return invariants.holder_pid(self.url, chat)

        pid = await anyio.to_thread.run_sync(invariants.holder_pid, self.url, chat)
        return self.by_pid(pid)

    async def say_and_wait(self, chat: int, text: str, timeout: float = 30) -> None:
        update = self.fake.push_text(chat, chat, text)
        try:
            await self.fake.wait_for(lambda: invariants.shown_once(self.fake, chat, text), timeout)
        except TimeoutError:
            raise AssertionError(self.story(chat, text, update)) from None

    def story(self, chat: int, text: str, update: int) -> str:
        """What became of one message, for a failure: its deliveries, what the chat was
        shown, and every replica's log lines that name its update."""
        attempts = [
            (a.status, round(a.ended - a.started, 2), a.duplicate)
            for a in self.fake.webhooks.attempts
            if a.update_id == update
        ]
        lines = [f"{text!r} (update {update}) in chat {chat} was not answered once"]
        lines.append(f"deliveries (status, seconds, duplicate): {attempts}")
        lines.append(f"the chat's last texts: {self.fake.texts(chat)[-6:]}")
        for log in sorted(self.tmp.glob("replica-*.log")):
            named = [
                line
                for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
                if str(update) in line or text in line or "error" in line.lower()
            ]
            lines.append(f"--- {log.name}: " + "\n".join(named[-20:]))
        return "\n".join(lines)

    async def streaming(self, chat: int) -> None:
        """Until a partial answer is on screen (the turn is mid-stream)."""

        def partial() -> bool:
            return any(t.startswith("You said: slow") for t in self.fake.texts(chat))

        await self.fake.wait_for(partial, 30)

    async def replace(self, old: Replica) -> Replica:
        fresh = await start_replica(
            self.tmp,
            self.fake.base_url,
            self.url,
            lease=LEASE,
            delay=self.delay,
            env=_env(self.fake),
            port=old.port,
        )
        self.replicas[self.replicas.index(old)] = fresh
        return fresh


def _env(fake: TelegramFake) -> dict[str, str]:
    return {TOKEN_ENV: fake.token, SECRET_ENV: WEBHOOK_SECRET}


async def _cluster(fake: TelegramFake, url: str, tmp: Path, delay: float) -> AsyncIterator[Cluster]:
    replicas: list[Replica] = []
    haproxy: Haproxy | None = None
    try:
        await start_together(
            replicas,
            3,
            lambda _: start_replica(
                tmp, fake.base_url, url, lease=LEASE, delay=delay, env=_env(fake)
            ),
        )
        haproxy = start_haproxy(tmp, [r.port for r in replicas])
        fake.webhooks.route(haproxy.base)
        yield Cluster(fake, url, tmp, replicas, haproxy, delay)
    finally:
        for replica in replicas:
            replica.close()
        if haproxy is not None:
            haproxy.stop()


@pytest.fixture
async def cluster(fake: TelegramFake, postgres_url: str, tmp_path: Path) -> AsyncIterator[Cluster]:
    async for made in _cluster(fake, postgres_url, tmp_path, delay=0.02):
        yield made


@pytest.fixture
async def slow_cluster(
    fake: TelegramFake, postgres_url: str, tmp_path: Path
) -> AsyncIterator[Cluster]:
    async for made in _cluster(fake, postgres_url, tmp_path, delay=0.4):
        yield made


async def test_every_message_is_answered_once_with_duplicate_deliveries(cluster: Cluster) -> None:
    assert len(cluster.fake.calls("setWebhook")) == 1, "one replica registers the webhook"
    cluster.fake.webhooks.duplicate_next(6)
    sent = {chat: [f"c{chat} m{i}" for i in range(3)] for chat in CHATS}

    async def talk(chat: int) -> None:
        for text in sent[chat]:
            await cluster.say_and_wait(chat, text)

    async with anyio.create_task_group() as group:
        for chat in CHATS:
            group.start_soon(talk, chat)
    duplicates = [a for a in cluster.fake.webhooks.attempts if a.duplicate]
    assert len(duplicates) == 6
    invariants.check(cluster.fake, cluster.url, sent)


async def test_delayed_deliveries_still_run_one_turn_each_in_order(cluster: Cluster) -> None:
    chat = CHATS[0]
    cluster.fake.webhooks.delay_next(1.0)
    await cluster.say_and_wait(chat, "late one")
    await cluster.say_and_wait(chat, "then this")
    invariants.check(cluster.fake, cluster.url, {chat: ["late one", "then this"]})


async def test_kill_9_mid_stream_the_chat_answers_again_and_nothing_runs_twice(
    slow_cluster: Cluster,
) -> None:
    c, chat = slow_cluster, CHATS[0]
    c.fake.push_text(chat, chat, SLOW)
    await c.streaming(chat)
    holder = await c.holder(chat)
    holder.kill()
    await c.say_and_wait(chat, "are you there")
    await c.fake.wait_for(lambda: INTERRUPTED in c.fake.texts(chat), 10)
    invariants.check(c.fake, c.url, {chat: [SLOW, "are you there"]}, interrupted={chat: [SLOW]})


async def test_kill_9_mid_stream_the_person_is_told_without_writing_again(
    slow_cluster: Cluster,
) -> None:
    c, chat = slow_cluster, CHATS[0]
    c.fake.push_text(chat, chat, SLOW)
    await c.streaming(chat)
    (await c.holder(chat)).kill()
    # Nothing more is sent: a live replica's sweep finds the chat left mid-turn.
    await c.fake.wait_for(lambda: INTERRUPTED in c.fake.texts(chat), 30)
    await c.say_and_wait(chat, "ok, again")
    invariants.check(c.fake, c.url, {chat: [SLOW, "ok, again"]}, interrupted={chat: [SLOW]})


async def test_sigstop_past_the_lease_then_sigcont_the_late_commit_is_refused(
    slow_cluster: Cluster,
) -> None:
    c, chat = slow_cluster, CHATS[1]
    c.fake.push_text(chat, chat, SLOW)
    await c.streaming(chat)
    stalled = await c.holder(chat)
    stalled.pause()
    await c.say_and_wait(chat, "anyone else")  # answered by another replica, after the lease
    stalled.resume()
    with anyio.fail_after(60):
        while not stalled.logged("turn_commit_fenced"):
            await anyio.sleep(0.1)  # a log file cannot be awaited; the predicate is the log line
    invariants.check(c.fake, c.url, {chat: [SLOW, "anyone else"]}, interrupted={chat: [SLOW]})


async def test_cancel_delivered_to_a_replica_without_the_lease_stops_the_turn(
    slow_cluster: Cluster,
) -> None:
    c, chat = slow_cluster, CHATS[2]
    c.fake.push_text(chat, chat, SLOW)
    await c.streaming(chat)
    holder = await c.holder(chat)
    other = next(r for r in c.replicas if r is not holder)
    c.fake.webhooks.route(f"http://127.0.0.1:{other.port}")
    cancel = c.fake.push_text(chat, chat, "/cancel")
    await c.fake.wait_for(lambda: c.fake.webhooks.answered(cancel) == [200], 10)
    with anyio.fail_after(30):
        while not holder.logged("turn_finished"):
            await anyio.sleep(0.1)
    assert '"outcome": "cancelled"' in holder.log.read_text()
    assert invariants.ANSWER + SLOW not in invariants.finals(c.fake, chat)
    await c.say_and_wait(chat, "still there?")  # the chat is free again: answered
    assert invariants.ANSWER + SLOW not in invariants.finals(c.fake, chat)


async def test_a_rolling_sigterm_of_all_three_replicas_loses_nothing(cluster: Cluster) -> None:
    sent: dict[int, list[str]] = {chat: [] for chat in CHATS}
    done = anyio.Event()

    async def talk(chat: int) -> None:
        i = 0
        while not done.is_set():
            text = f"c{chat} r{i}"
            sent[chat].append(text)
            await cluster.say_and_wait(chat, text, timeout=60)
            i += 1

    async with anyio.create_task_group() as group:
        for chat in CHATS:
            group.start_soon(talk, chat)
        for old in list(cluster.replicas):
            assert await old.terminate() == 0, old.log.read_text()[-2000:]
            assert old.logged("leases_released")
            await cluster.replace(old)
        done.set()
    invariants.check(cluster.fake, cluster.url, sent)
