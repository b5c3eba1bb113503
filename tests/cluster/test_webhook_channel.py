"""The Telegram channel in webhook mode: the fake delivers as Telegram does, the replica
stores, takes and answers; on a real PostgreSQL."""

from __future__ import annotations

import anyio
import psycopg
import pytest

from tests.cluster.replicas import WEBHOOK_URL, listen_port, replica
from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER
from thalos_bot.providers.scripted import Say, ScriptedProvider

pytestmark = pytest.mark.anyio


async def test_a_message_delivered_by_webhook_is_answered_once(
    fake: TelegramFake, postgres_url: str
) -> None:
    async with replica(fake, postgres_url) as bot:
        fake.webhooks.route(f"http://127.0.0.1:{listen_port(bot)}")
        assert fake.webhook_url == WEBHOOK_URL
        assert len(fake.calls("setWebhook")) == 1
        fake.webhooks.duplicate_next(1)
        update_id = bot.say("hello there")
        texts = await bot.answer(1)
        assert texts == ["hello there"] or texts[-1].endswith("hello there")
        await fake.wait_for(lambda: len(fake.webhooks.answered(update_id)) == 2)
        assert fake.webhooks.answered(update_id) == [200, 200], "the duplicate too"
        assert fake.pending_update_count == 0
        assert len(bot.provider.requests) == 1, "a duplicate delivery runs no second turn"


async def test_messages_are_taken_in_update_order(fake: TelegramFake, postgres_url: str) -> None:
    provider = ScriptedProvider([[Say("one")], [Say("two")], [Say("three")]])
    async with replica(fake, postgres_url, provider=provider) as bot:
        fake.webhooks.route(f"http://127.0.0.1:{listen_port(bot)}")
        for text in ("first", "second", "third"):
            bot.say(text)
            await bot.answer(len(bot.fake.texts(USER)) + 1)
        seen = [r.messages[-1].content[0] for r in provider.requests]
        assert [getattr(b, "text", "") for b in seen] == ["first", "second", "third"]


async def test_getupdates_is_refused_while_the_webhook_is_set(
    fake: TelegramFake, postgres_url: str
) -> None:
    async with replica(fake, postgres_url):
        pass
    assert fake.webhook_url == WEBHOOK_URL, "a replica stopping never deletes it"
    assert fake.calls("getUpdates") == [], "no replica polls"


async def listening_connections(url: str) -> int:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND query LIKE 'LISTEN %%' AND pid <> pg_backend_pid()"
        )
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def test_a_stopped_replica_leaves_no_listening_connection_open(
    fake: TelegramFake, postgres_url: str
) -> None:
    async with replica(fake, postgres_url) as bot:
        fake.webhooks.route(f"http://127.0.0.1:{listen_port(bot)}")
        bot.say("hello")
        await bot.answer(1)  # heard through NOTIFY: the replica waits in notifies()
    assert await listening_connections(postgres_url) == 0


async def test_a_replica_stopped_while_it_reads_the_running_waits_closes_its_listener(
    fake: TelegramFake, postgres_url: str
) -> None:
    """A stop that lands while the LISTEN connection is open and a query on another
    connection is running: `async with conn` left the LISTEN connection open then (its
    exit's rollback was cancelled in turn, so its close never ran)."""
    async with replica(fake, postgres_url):
        pass  # the schema is made
    blocker = await psycopg.AsyncConnection.connect(postgres_url)
    async with blocker, blocker.transaction():
        await blocker.execute("LOCK TABLE chat_holds IN ACCESS EXCLUSIVE MODE")
        with anyio.move_on_after(3) as waited:
            async with replica(fake, postgres_url):
                pass
        assert waited.cancelled_caught, "the start waited on the locked table"
        assert await listening_connections(postgres_url) == 0
