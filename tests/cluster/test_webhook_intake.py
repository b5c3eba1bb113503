"""The webhook listener over real HTTP, storing into a real PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
import httpx
import psycopg
import pytest

from thalos_bot.cluster.inbox import Inbox
from thalos_bot.storage.pg.database import PgDatabase, connection_kwargs, fetch_all
from thalos_bot_telegram.webhook import lane_of
from thalos_bot_telegram.webhook_intake import SECRET_HEADER, Listener, serving

pytestmark = pytest.mark.anyio
BOT = 123456
USER = 4242
STRANGER = 6666
SECRET = "s3cret-token_for-tests"


def update(update_id: int, sender: int = USER, text: str = "hello") -> dict[str, object]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 1_700_000_000,
            "chat": {"id": sender, "type": "private", "first_name": "T"},
            "from": {"id": sender, "is_bot": False, "first_name": "T"},
            "text": text,
        },
    }


@dataclass
class Served:
    db: PgDatabase
    listener: Listener
    client: httpx.AsyncClient

    async def post(self, body: object, secret: str | None = SECRET) -> int:
        headers = {} if secret is None else {SECRET_HEADER: secret}
        answer = await self.client.post("/telegram", json=body, headers=headers)
        return answer.status_code

    async def stored(self) -> list[int]:
        async with self.db.read() as conn:
            rows = await fetch_all(conn, "SELECT update_id FROM webhook_inbox ORDER BY update_id")
        return [int(r["update_id"]) for r in rows]


@pytest.fixture
async def served(postgres_url: str) -> AsyncIterator[Served]:
    async with await PgDatabase.open(postgres_url) as db:
        listener = Listener(Inbox(db, BOT), SECRET, lane_of(frozenset({USER})))
        async with (
            serving(listener, "127.0.0.1:0") as port,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client,
        ):
            yield Served(db, listener, client)


async def test_a_delivery_is_stored_once_however_often_it_comes(served: Served) -> None:
    assert await served.post(update(7001)) == 200
    assert await served.post(update(7001)) == 200, "a duplicate is acknowledged too"
    assert await served.stored() == [7001]
    assert (served.listener.stored, served.listener.duplicates) == (1, 1)


async def test_deliveries_out_of_order_are_all_kept(served: Served) -> None:
    # No "highest update_id seen" mark: a lower id arriving later is still new.
    for update_id in (7005, 7003, 7004):
        assert await served.post(update(update_id)) == 200
    assert await served.stored() == [7003, 7004, 7005]


async def test_a_wrong_or_missing_secret_is_refused_and_nothing_stored(served: Served) -> None:
    assert await served.post(update(7001), secret="not-it") == 401
    assert await served.post(update(7001), secret=None) == 401
    assert await served.stored() == []


async def test_a_stranger_is_answered_200_and_nothing_is_stored(served: Served) -> None:
    assert await served.post(update(7001, sender=STRANGER)) == 200
    assert await served.stored() == []


async def test_a_stored_update_is_notified(served: Served, postgres_url: str) -> None:
    conn = await psycopg.AsyncConnection.connect(
        postgres_url, autocommit=True, **connection_kwargs()
    )
    async with conn:
        await conn.execute("LISTEN thalos_inbox")
        assert await served.post(update(7001)) == 200
        with anyio.fail_after(10):
            notes = [n.payload async for n in conn.notifies(stop_after=1)]
        assert notes == [f"{BOT}:{USER}"]


async def test_503_while_the_database_cannot_take_the_row(
    served: Served, postgres_url: str
) -> None:
    blocker = await psycopg.AsyncConnection.connect(postgres_url, **connection_kwargs())
    async with blocker:
        async with blocker.transaction():
            await blocker.execute("LOCK TABLE webhook_inbox IN ACCESS EXCLUSIVE MODE")
            assert await served.post(update(7001)) == 503, "Telegram must deliver it again"
        assert await served.post(update(7001)) == 200
    assert await served.stored() == [7001]


async def test_503_once_the_database_is_gone(served: Served) -> None:
    await served.db.aclose()
    assert await served.post(update(7001)) == 503


async def test_readyz_goes_503_on_drain_while_healthz_stays(served: Served) -> None:
    assert (await served.client.get("/readyz")).status_code == 200
    served.listener.drain()
    assert (await served.client.get("/readyz")).status_code == 503
    assert (await served.client.get("/healthz")).status_code == 200
    assert await served.post(update(7001)) == 200, "deliveries in flight are still stored"
