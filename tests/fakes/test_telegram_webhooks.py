"""The Telegram fake delivers webhooks as Telegram does: one chat's updates in order and
one at a time, chats concurrently up to max_connections, the secret header, retries on a
non-2xx answer, duplicates on demand; setWebhook's rules; getUpdates refused meanwhile."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import anyio
import httpx
import pytest
from aiohttp import web

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_webhook import SECRET_HEADER

pytestmark = pytest.mark.anyio
SECRET = "fake-secret_1"


@pytest.fixture
def fake() -> Iterator[TelegramFake]:
    with TelegramFake(per_chat_interval=0, global_per_second=0) as running:
        yield running


@dataclass
class Receiver:
    """A webhook endpoint that answers as told and records what it got."""

    got: list[tuple[int, int, str | None]] = field(default_factory=list)
    """(update_id, chat, secret header) in arrival order."""
    refuse: set[int] = field(default_factory=set)
    """update ids to answer 500 once."""
    hold: anyio.Event = field(default_factory=anyio.Event)
    holding: set[int] = field(default_factory=set)
    """Chats whose deliveries wait for ``hold`` before they are answered."""
    in_flight: int = 0
    most_in_flight: int = 0
    arrived: anyio.Event = field(default_factory=anyio.Event)

    async def until(self, count: int) -> None:
        """Until ``count`` deliveries have arrived (whatever their answer)."""
        with anyio.fail_after(10):
            while len(self.got) < count:
                await self.arrived.wait()
                self.arrived = anyio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        chat = body["message"]["chat"]["id"]
        self.got.append((body["update_id"], chat, request.headers.get(SECRET_HEADER)))
        self.arrived.set()
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if chat in self.holding:
                await self.hold.wait()
            if body["update_id"] in self.refuse:
                self.refuse.discard(body["update_id"])
                return web.Response(status=500)
            return web.Response(text="")
        finally:
            self.in_flight -= 1


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, int]]:
    got = Receiver()
    app = web.Application()
    app.router.add_post("/hook", got.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield got, port
    finally:
        await runner.cleanup()


async def api(fake: TelegramFake, method: str, **params: object) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(f"{fake.base_url}/bot{fake.token}/{method}", json=params)


async def test_deliveries_keep_each_chats_order_and_retry_until_2xx(
    fake: TelegramFake, receiver: tuple[Receiver, int]
) -> None:
    got, port = receiver
    fake.webhooks.route(f"http://127.0.0.1:{port}")
    answer = await api(fake, "setWebhook", url="https://bot.example.com/hook", secret_token=SECRET)
    assert answer.json() == {"ok": True, "result": True, "description": "Webhook was set"}
    first = fake.push_text(4242, 4242, "one")
    got.refuse.add(first)
    second = fake.push_text(4242, 4242, "two")
    await fake.wait_for(lambda: fake.pending_update_count == 0, 10)
    mine = [u for u, chat, _ in got.got if chat == 4242]
    assert mine == [first, first, second], "the refused one again, and the next only after it"
    assert {secret for _, _, secret in got.got} == {SECRET}
    assert fake.webhooks.answered(first) == [500, 200]
    info = (await api(fake, "getWebhookInfo")).json()["result"]
    refused = "Wrong response from the webhook: 500 Internal Server Error"
    assert info["last_error_message"] == refused
    assert isinstance(info["last_error_date"], int), "kept after later deliveries succeed"


async def test_chats_are_delivered_concurrently_up_to_max_connections(
    fake: TelegramFake, receiver: tuple[Receiver, int]
) -> None:
    got, port = receiver
    fake.webhooks.route(f"http://127.0.0.1:{port}")
    await api(fake, "setWebhook", url="https://bot.example.com/hook", max_connections=2)
    got.holding = {1, 2, 3}
    for chat in (1, 2, 3):
        fake.push_text(chat, chat, "hi")
    await got.until(2)
    assert got.most_in_flight == 2, "a third chat waits for a free connection"
    got.hold.set()
    await fake.wait_for(lambda: fake.pending_update_count == 0, 10)
    assert sorted(chat for _, chat, _ in got.got) == [1, 2, 3]
    assert got.most_in_flight == 2, "never more than max_connections at once"
    assert all(secret is None for _, _, secret in got.got), "no secret set, no header"


async def test_a_duplicate_delivery_on_demand(
    fake: TelegramFake, receiver: tuple[Receiver, int]
) -> None:
    got, port = receiver
    fake.webhooks.route(f"http://127.0.0.1:{port}")
    await api(fake, "setWebhook", url="https://bot.example.com/hook")
    fake.webhooks.duplicate_next(1)
    update_id = fake.push_text(4242, 4242, "twice")
    await got.until(2)
    assert [u for u, _, _ in got.got] == [update_id, update_id]


async def test_setwebhook_refuses_a_bad_secret_and_getupdates_is_refused_meanwhile(
    fake: TelegramFake,
) -> None:
    bad = await api(fake, "setWebhook", url="https://bot.example.com/hook", secret_token="a:b")
    assert bad.status_code == 400
    assert bad.json()["description"] == "Bad Request: secret token contains unallowed characters"
    assert fake.webhook_url is None
    await api(fake, "setWebhook", url="https://bot.example.com/hook", secret_token=SECRET)
    info = (await api(fake, "getWebhookInfo")).json()["result"]
    assert info["url"] == "https://bot.example.com/hook"
    polled = await api(fake, "getUpdates")
    assert polled.status_code == 409
    assert "can't use getUpdates method while webhook is active" in polled.json()["description"]
    deleted = (await api(fake, "deleteWebhook")).json()
    assert deleted["description"] == "Webhook was deleted"
    assert (await api(fake, "getUpdates")).status_code == 200
