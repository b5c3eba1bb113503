"""Three real ``thalos-bot run`` daemons (``[storage] url`` on PostgreSQL, Telegram in
webhook mode, the scripted provider) behind a real HAProxy; the Telegram fake delivers
the webhooks. Unlike tests/cluster/test_replicas.py (hand-built replicas), this is the
wiring a user runs: the host's stores, the fence in the session store, the claiming
outbox. The invariant checker reads what each chat was shown and the database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from tests.cluster import invariants
from tests.cluster.daemons import ALLOWED, Daemons, running_daemons
from tests.fakes.telegram_api import TelegramFake
from thalos_bot_telegram.webhook import INTERRUPTED

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(240)]
LEASE = 3.0
SLOW = "slow " + " ".join(f"w{i}" for i in range(150))
"""Streamed one word per 30 ms by the scripted provider: about 4.5 s, long enough to
kill its replica mid-stream."""


@pytest.fixture
async def daemons(fake: TelegramFake, postgres_url: str, tmp_path: Path) -> AsyncIterator[Daemons]:
    async with running_daemons(fake, postgres_url, tmp_path, lease=LEASE) as made:
        yield made


async def test_three_daemons_answer_each_message_once(daemons: Daemons) -> None:
    assert len(daemons.fake.calls("setWebhook")) == 1, "one replica registers the webhook"
    daemons.fake.webhooks.duplicate_next(4)
    sent = {chat: [f"c{chat} m{i}" for i in range(3)] for chat in ALLOWED}

    async def talk(chat: int) -> None:
        for text in sent[chat]:
            await daemons.say_and_wait(chat, text)

    async with anyio.create_task_group() as group:
        for chat in ALLOWED:
            group.start_soon(talk, chat)
    assert len([a for a in daemons.fake.webhooks.attempts if a.duplicate]) == 4
    invariants.check(daemons.fake, daemons.url, sent)
    for replica in daemons.replicas:
        assert await replica.terminate() == 0, replica.log.read_text()[-2000:]
        assert replica.logged("leases_released")


async def test_kill_9_of_the_lease_holder_mid_stream(daemons: Daemons) -> None:
    d, chat = daemons, ALLOWED[0]
    d.fake.push_text(chat, chat, SLOW)
    await d.fake.wait_for(
        lambda: any(t.startswith("You said: slow") for t in d.fake.texts(chat)), 60
    )
    holder = await d.holder(chat)
    holder.kill()
    await d.say_and_wait(chat, "are you there")
    await d.fake.wait_for(lambda: INTERRUPTED in d.fake.texts(chat), 30)
    invariants.check(d.fake, d.url, {chat: [SLOW, "are you there"]}, interrupted={chat: [SLOW]})


async def test_sigstop_past_the_lease_the_late_commit_is_refused(daemons: Daemons) -> None:
    """The host hands the lease book to the session store (``Stores.fence``): the
    stalled daemon's turn commits neither history nor a final once it continues."""
    d, chat = daemons, ALLOWED[1]
    d.fake.push_text(chat, chat, SLOW)
    await d.fake.wait_for(
        lambda: any(t.startswith("You said: slow") for t in d.fake.texts(chat)), 60
    )
    stalled = await d.holder(chat)
    stalled.pause()
    await d.say_and_wait(chat, "anyone else")  # another daemon, once the lease ran out
    stalled.resume()
    with anyio.fail_after(60):
        while not stalled.logged("turn_commit_fenced"):
            await anyio.sleep(0.1)  # a log file cannot be awaited; the predicate is the line
    invariants.check(d.fake, d.url, {chat: [SLOW, "anyone else"]}, interrupted={chat: [SLOW]})
