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
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import psycopg
import structlog
from aiohttp import web
from psycopg_pool import PoolTimeout

from thalos_bot.channels.listeners.address import split_listen
from thalos_bot.cluster.inbox import Inbox
from thalos_bot.storage.database import DatabaseError

log = structlog.get_logger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 - a header's name
PATH = "/telegram"
STORE_BOUND = 2.0
"""Seconds one insert may take before the delivery is refused with 503."""

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

    def app(self) -> web.Application:
        app = web.Application(client_max_size=1 << 20)
        app.router.add_post(PATH, self._update)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        return app

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        if self.ready:
            return web.Response(text="ready\n")
        return web.Response(status=503, text="draining\n")

    async def _update(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self._secret):
            log.warning("telegram_webhook_bad_secret", peer=request.remote)
            return web.Response(status=401)
        try:
            body = await request.json()
        except (ValueError, RecursionError):  # not JSON, or nested past the parser
            log.warning("telegram_webhook_not_json")
            return web.Response(status=400)
        update_id = body.get("update_id") if isinstance(body, dict) else None
        if isinstance(update_id, bool) or not isinstance(update_id, int) or update_id < 0:
            log.warning("telegram_webhook_not_an_update")
            return web.Response(text="")  # retrying it cannot help
        lane = self._lane_of(body)
        if lane is None:
            return web.Response(text="")  # a stranger: nothing stored, nothing said
        try:
            with anyio.fail_after(STORE_BOUND):
                new = await self._inbox.put(update_id, lane, body)
        except (TimeoutError, psycopg.Error, PoolTimeout, DatabaseError, OSError) as exc:
            self.refused += 1
            log.warning(
                "telegram_webhook_store_down", update_id=update_id, error=type(exc).__name__
            )
            return web.Response(status=503)
        if new:
            self.stored += 1
        else:
            self.duplicates += 1
        return web.Response(text="")


@asynccontextmanager
async def serving(listener: Listener, listen: str) -> AsyncIterator[int]:
    """Serve ``listener`` on ``listen`` (host:port); yield the port bound (for port 0)."""
    runner = web.AppRunner(listener.app(), access_log=None, handle_signals=False)
    await runner.setup()
    host, port = split_listen(listen, "127.0.0.1:8081")
    site = web.TCPSite(runner, host, port, reuse_address=True)
    try:
        await site.start()
        server = site._server  # noqa: SLF001 - the one way to learn an ephemeral port
        sockets = getattr(server, "sockets", None) or ()
        bound = sockets[0].getsockname()[1] if sockets else port
        log.info("telegram_webhook_listening", host=host, port=bound)
        yield int(bound)
    finally:
        with anyio.CancelScope(shield=True):
            await runner.cleanup()
