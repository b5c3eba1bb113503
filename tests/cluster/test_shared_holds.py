"""A 429's ``retry_after`` is stored on the chat's row, so every replica obeys it: two
replicas (the real Telegram plugin in webhook mode) on one PostgreSQL, one Telegram
fake that records every call made into a wait it handed out (the fixture fails the
test on any)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.cluster.replicas import listen_port, replica
from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER
from thalos_bot.channels.ports import Notice
from thalos_bot.cluster import holds
from thalos_bot.cluster.holds import ChatHolds
from thalos_bot.domain.ids import ConversationId
from thalos_bot.providers.scripted import ScriptedProvider, echo_reply
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot_telegram.adapter import TelegramAdapter
from thalos_bot_telegram.client import bot_id_of

pytestmark = pytest.mark.anyio
CHAT = ConversationId(str(USER))


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url) as opened:
        yield opened


def adapter_of(bot: object) -> TelegramAdapter:
    adapter = getattr(bot, "pair").adapter  # noqa: B009 - the harness's Bot, untyped here
    assert isinstance(adapter, TelegramAdapter)
    return adapter


async def test_a_replica_obeys_the_wait_another_one_was_told(
    fake: TelegramFake, postgres_url: str, tmp_path: Path
) -> None:
    fake.add_chat(USER)
    fake.fail_next("sendMessage", 429, retry_after=5)
    listener = await psycopg.AsyncConnection.connect(postgres_url, autocommit=True)
    async with listener, replica(fake, postgres_url, tmp_path=tmp_path / "a") as a:
        await listener.execute(f"LISTEN {holds.CHANNEL}")
        adapter_of(a).post(CHAT, Notice("first"))
        heard = [n.payload async for n in listener.notifies(timeout=15, stop_after=1)]
        assert heard, "the replica told the 429 stored its wait"
        assert fake.texts(USER) == [], "a waits"
        # b starts while a's wait runs; b's own pacing would let "second" go at once
        async with replica(fake, postgres_url, tmp_path=tmp_path / "b") as b:
            adapter_of(b).post(CHAT, Notice("second"))
            await fake.wait_for(lambda: sorted(fake.texts(USER)) == ["first", "second"], 20)
    assert fake.retry_after_violations == [], "b sent into the wait a was told"


async def test_a_running_replica_obeys_a_wait_it_hears_of(
    fake: TelegramFake, db: PgDatabase, postgres_url: str, tmp_path: Path
) -> None:
    """Another replica (played by the test) is told a 429 and stores it; then a message
    comes. The NOTIFY queue is in commit order and the replica reads it in turn, so it
    holds the chat before it even hears of the message."""
    fake.add_chat(USER)
    bot = bot_id_of(fake.token)
    assert bot is not None
    echo = ScriptedProvider(default=echo_reply)
    async with replica(fake, postgres_url, provider=echo, tmp_path=tmp_path, streaming="edit") as b:
        fake.webhooks.route(f"http://127.0.0.1:{listen_port(b)}")
        fake.fail_next("sendMessage", 429, retry_after=4)
        async with httpx.AsyncClient() as client:
            told = await client.post(
                f"{fake.base_url}/bot{fake.token}/sendMessage",
                json={"chat_id": USER, "text": "from the other replica"},
            )
        assert told.status_code == 429
        await ChatHolds(db, bot).hold(USER, told.json()["parameters"]["retry_after"])
        b.say("hello")
        await fake.wait_for(lambda: "You said: hello" in fake.texts(USER), 20)
    assert fake.retry_after_violations == [], "the replica answered into the wait"


async def test_a_hold_keeps_the_longer_wait_and_notifies(db: PgDatabase, postgres_url: str) -> None:
    store = ChatHolds(db, 77)
    with psycopg.connect(postgres_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {holds.CHANNEL}")
        assert await store.hold(42, 30) > 29
        assert 0 < await store.hold(42, 1) <= 30
        assert await store.hold(42, 1) > 1, "a shorter wait never cuts a longer one"
        notes = [n.payload for n in listener.notifies(timeout=5, stop_after=3)]
    heard = [holds.parse(p, 77) for p in notes]
    assert [h[0] for h in heard if h is not None] == [42, 42, 42]
    assert holds.parse(notes[0], 78) is None, "another bot's hold is not this one's"
    assert list((await store.running()).keys()) == [42]
    assert await store.prune() == 0, "a running hold stays"
