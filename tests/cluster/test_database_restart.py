"""PostgreSQL restarted under a running replica, fast and immediate: Telegram is told
503 while the database is away (so it delivers again), and afterwards every message is
answered once: nothing lost, nothing twice."""

from __future__ import annotations

from urllib.parse import quote

import anyio
import anyio.to_thread
import pytest

from tests.cluster import invariants
from tests.cluster.replicas import listen_port, replica
from tests.fakes.telegram_api import TelegramFake
from tests.storage.conftest import PostgresSchema
from tests.storage.postgres import PostgresServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]
CHAT = 4242


async def answered(fake: TelegramFake, text: str) -> None:
    def shown() -> bool:
        return invariants.shown_once(fake, CHAT, text)

    await fake.wait_for(shown, 60)


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_a_database_restart_loses_and_repeats_nothing(
    fake: TelegramFake, postgres_schema: PostgresSchema, postgres_server: PostgresServer, mode: str
) -> None:
    # The test server runs with synchronous_commit off, which a crash (immediate) may
    # cost the last commits under: this test's connections commit durably, as a
    # production server does by default.
    postgres_url = postgres_schema.url().replace(
        "options=", "options=" + quote("-c synchronous_commit=on "), 1
    )
    async with replica(fake, postgres_url, lease_seconds=10.0) as bot:
        fake.webhooks.route(f"http://127.0.0.1:{listen_port(bot)}")
        sent = ["before"]
        bot.say("before")
        await answered(fake, "before")
        # Deliveries while the server is down get 503 and are retried by Telegram.
        restarting = anyio.Event()

        async def restart() -> None:
            await anyio.to_thread.run_sync(postgres_server.restart, mode)
            restarting.set()

        async with anyio.create_task_group() as group:
            group.start_soon(restart)
            for i in range(3):
                text = f"during {i}"
                sent.append(text)
                bot.say(text)
                await answered(fake, text)
        await restarting.wait()
        bot.say("after")
        sent.append("after")
        await answered(fake, "after")
        shown = invariants.finals(fake, CHAT)
        assert len(shown) == len(set(shown)), shown
        for text in sent:
            assert invariants.ANSWER + text in shown
        assert invariants.untaken(postgres_url) == 0
