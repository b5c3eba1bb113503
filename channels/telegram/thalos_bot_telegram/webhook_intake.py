"""The webhook listener: Telegram's deliveries in, the balancer's health checks out.

``POST /telegram`` does only this, so Telegram gets its answer in milliseconds:

1. the ``X-Telegram-Bot-Api-Secret-Token`` header is compared with the secret in
   constant time (:func:`hmac.compare_digest`); a wrong one gets 401 and nothing else;
2. an update from someone not allowed (a stranger) gets 200 and nothing is stored;
3. the update goes into the inbox (``INSERT … ON CONFLICT DO NOTHING`` + ``NOTIFY``);
4. 200.

If the database cannot be reached within :data:`STORE_BOUND` seconds the answer is 503,
so Telegram delivers the update again later: nothing is acknowledged that was not
stored. ``GET /healthz`` says the process is alive; ``GET /readyz`` says it takes
deliveries, and answers 503 from the moment shutdown begins (:meth:`Listener.drain`),
so the balancer stops sending here before anything else stops.

It is served on the kit's bounded uvicorn (:mod:`thalos_bot.channels.listeners.server`)
within the ``webhook_*`` keys' bounds; the health checks are not rate limited (a flood
through the balancer must never make its checks fail).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import psycopg
import structlog
from psycopg_pool import PoolTimeout
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from thalos_bot.channels.listeners.address import split_listen
from thalos_bot.channels.listeners.body import BodyCap, BodyTooLargeError, too_large
from thalos_bot.channels.listeners.rate import rate_limited
from thalos_bot.channels.listeners.ready import readiness
from thalos_bot.channels.listeners.served import Served, beside
from thalos_bot.channels.listeners.server import bind
from thalos_bot.channels.listeners.server import serving as served_on
from thalos_bot.cluster.inbox import Inbox
from thalos_bot.storage.database import DatabaseError
from thalos_bot_telegram.config import WEBHOOK_BODY_LIMIT, TelegramConfig
from thalos_bot_telegram.updates import update_id_of

log = structlog.get_logger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 - a header's name
PATH = "/telegram"
STORE_BOUND = 2.0
"""Seconds one insert may take before the delivery is refused with 503."""
BODY_LIMIT = WEBHOOK_BODY_LIMIT
HEALTH = "/healthz"
MAX_UPDATE_ID = 2**63 - 1
"""The inbox's column is a bigint: a larger id is no update (stored, it would fail as
the database being down, and be refused with 503 for Telegram to retry forever)."""

Lane = Callable[[Mapping[str, Any]], str | None]
"""The lane (chat) an update belongs to, or None for a stranger's."""


class Listener:
    def __init__(self, inbox: Inbox, secret: str, lane_of: Lane) -> None:
        self._inbox = inbox
        self._secret = secret.encode()
        self._lane_of = lane_of
        self.ready = True
        self.stored = 0
        self.duplicates = 0
        self.refused = 0

    def drain(self) -> None:
        """Shutdown begins: /readyz answers 503 from now on."""
        self.ready = False

    def app(self) -> ASGIApp:
        """The listener's routes, its bodies capped at :data:`BODY_LIMIT`."""
        routes = [
            Route(PATH, self._update, methods=["POST"]),
            Route(HEALTH, self._healthz, methods=["GET"]),
        ]
        app = Starlette(routes=routes, exception_handlers={BodyTooLargeError: too_large})
        return BodyCap(app, lambda _path: BODY_LIMIT)

    async def _healthz(self, _: Request) -> Response:
        return PlainTextResponse("ok\n")

    async def _update(self, request: Request) -> Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self._secret):
            peer = request.client.host if request.client else None
            log.warning("telegram_webhook_bad_secret", peer=peer)
            return Response(status_code=401)
        try:
            body = json.loads(await request.body())
        except (ValueError, RecursionError):  # not JSON, or nested past the parser
            log.warning("telegram_webhook_not_json")
            return Response(status_code=400)
        update_id = update_id_of(body)
        if update_id is None or update_id > MAX_UPDATE_ID:
            log.warning("telegram_webhook_not_an_update")
            return Response()  # retrying it cannot help
        lane = self._lane_of(body)
        if lane is None:
            return Response()  # a stranger: nothing stored, nothing said
        try:
            with anyio.fail_after(STORE_BOUND):
                new = await self._inbox.put(update_id, lane, body)
        except (TimeoutError, psycopg.Error, PoolTimeout, DatabaseError, OSError) as exc:
            self.refused += 1
            log.warning(
                "telegram_webhook_store_down", update_id=update_id, error=type(exc).__name__
            )
            return Response(status_code=503)
        if new:
            self.stored += 1
        else:
            self.duplicates += 1
        return Response()


@asynccontextmanager
async def serving(
    listener: Listener, listen: str, config: TelegramConfig | None = None
) -> AsyncIterator[int]:
    """Serve ``listener`` on ``listen`` (host:port) within the bounds ``config``'s
    ``webhook_*`` keys set (without one, their defaults); yield the port bound (for
    port 0)."""
    config = config or TelegramConfig()
    host, port = split_listen(listen, "127.0.0.1:8081")
    sock = bind(host, port, "channels.telegram", "webhook_listen")
    bound = int(sock.getsockname()[1])
    app = listener.app()  # behind the per-address rate limit, the health checks beside it
    limited = rate_limited(app, config.webhook_rate_limit, config.webhook_rate_burst)
    probes = beside(readiness(lambda: listener.ready), beside(Served(app, HEALTH.__eq__), limited))
    async with served_on(
        probes,
        sock,
        header_timeout=config.webhook_header_timeout,
        max_connections=config.webhook_connection_cap,
        forwarded_allow_ips=config.webhook_forwarded_allow_ips,
        name="telegram_webhook",
    ):
        log.info("telegram_webhook_listening", host=host, port=bound)
        yield bound
