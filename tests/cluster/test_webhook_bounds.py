"""The webhook listener's bounds over real HTTP: a header timeout, a connection cap, a
per-address rate limit that spares Telegram's deliveries, and a body counted in bytes.

The listener runs in the test's own event loop, so every client here is asynchronous
(a blocking socket call would stall the server it waits for)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio
import anyio.abc
import httpx
import pytest

from tests.cluster.test_webhook_intake import BOT, SECRET, USER, update
from thalos_bot.cluster.inbox import Inbox
from thalos_bot.storage.pg.database import PgDatabase, fetch_all
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.webhook import lane_of
from thalos_bot_telegram.webhook_intake import SECRET_HEADER, Listener, serving

pytestmark = pytest.mark.anyio

CAP = 16
BOUNDS = TelegramConfig(
    webhook_header_timeout=1.0,
    webhook_max_connections=CAP - 1,
    webhook_connection_cap=CAP,
    webhook_rate_limit=1,
    webhook_rate_burst=3,
    webhook_forwarded_allow_ips=["127.0.0.1"],
)
"""One request a minute after a burst of three: the fourth inside a minute is refused
however slow the machine is. The balancer is on 127.0.0.1 and forwards each client's
address."""
FLOODER = {"X-Forwarded-For": "198.51.100.7"}
TELEGRAM = {"X-Forwarded-For": "149.154.167.50"}


@dataclass
class Bounded:
    db: PgDatabase
    port: int
    client: httpx.AsyncClient

    async def stored(self) -> list[int]:
        async with self.db.read() as conn:
            rows = await fetch_all(conn, "SELECT update_id FROM webhook_inbox ORDER BY update_id")
        return [int(r["update_id"]) for r in rows]

    async def connect(self) -> anyio.abc.SocketStream:
        with anyio.fail_after(30):
            return await anyio.connect_tcp("127.0.0.1", self.port)


@pytest.fixture
async def bounded(postgres_url: str) -> AsyncIterator[Bounded]:
    async with await PgDatabase.open(postgres_url) as db:
        listener = Listener(Inbox(db, BOT), SECRET, lane_of(frozenset({USER})))
        async with (
            serving(listener, "127.0.0.1:0", BOUNDS) as port,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client,
        ):
            yield Bounded(db, port, client)


async def _closed_by_server(stream: anyio.abc.SocketStream, wait: float) -> bool:
    """Whether the server closes ``stream`` within ``wait`` seconds."""
    with anyio.move_on_after(wait):
        try:
            await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return True
        return False  # it answered something: not a close
    return False


async def test_a_silent_connection_is_closed_after_the_header_timeout(bounded: Bounded) -> None:
    stream = await bounded.connect()
    async with stream:
        assert await _closed_by_server(stream, 30), "the listener kept a silent connection"


async def test_idle_connections_past_the_cap_leave_readyz_answered(bounded: Bounded) -> None:
    async with contextlib.AsyncExitStack() as held:
        idle = [await held.enter_async_context(await bounded.connect()) for _ in range(CAP * 4)]
        assert (await bounded.client.get("/readyz")).status_code == 200
        still = [not await _closed_by_server(stream, 0.05) for stream in idle]
    assert sum(still) <= CAP, f"{sum(still)} idle connections held, past the cap of {CAP}"


async def test_a_flood_is_refused_while_telegram_still_delivers(bounded: Bounded) -> None:
    flood = [
        await bounded.client.post("/telegram", json=update(7001), headers=FLOODER) for _ in range(4)
    ]
    assert [answer.status_code for answer in flood[:3]] == [401, 401, 401]
    assert flood[3].status_code == 429
    assert 1 <= int(flood[3].headers["retry-after"]) <= 60
    probe = await bounded.client.get("/readyz", headers=FLOODER)
    assert probe.status_code == 200, "the balancer's health checks are never limited"
    delivered = await bounded.client.post(
        "/telegram", json=update(7002), headers={**TELEGRAM, SECRET_HEADER: SECRET}
    )
    assert delivered.status_code == 200
    assert await bounded.stored() == [7002]


CHUNK = b" " * 65536
"""Whitespace: valid JSON padding, so only the byte count can refuse it."""


async def test_a_chunked_body_past_one_mib_is_refused(bounded: Bounded) -> None:
    """The body goes chunked (no Content-Length to check) and never ends: a listener
    that does not count would wait for the rest, and the test would time out."""
    head = (
        "POST /telegram HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
        f"Content-Type: application/json\r\n{SECRET_HEADER}: {SECRET}\r\n\r\n"
    ).encode()
    stream = await bounded.connect()
    answer = b""
    async with stream, anyio.create_task_group() as group:

        async def send() -> None:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.send(head)
                for _ in range(40):  # 2.5 MiB, never the closing chunk
                    await stream.send(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))

        group.start_soon(send)
        with anyio.fail_after(30):
            while b"\r\n" not in answer:
                answer += await stream.receive()
        group.cancel_scope.cancel()
    assert answer.split(b" ", 2)[1] == b"413"
    assert await bounded.stored() == []
