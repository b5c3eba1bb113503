"""Registers the web channel under the ``thalos_bot.channels`` entry-point group.

The server is Starlette on uvicorn. Both were already pinned for the tests (uvicorn
serves the fakes' ASGI apps), both run on the daemon's asyncio loop under anyio with no
thread of their own, and Starlette's ``StreamingResponse`` is all Server-Sent Events
need; aiohttp would have brought a second HTTP stack with its own loop conventions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog

from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.intake.held import HeldFiles
from thalos_bot.channels.listeners.server import bind, serving
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.channels.running import Runtime, relay_presses
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_web.adapter import WebAdapter
from thalos_bot_web.app import WebApp
from thalos_bot_web.config import UPLOAD_LIMIT, WebConfig
from thalos_bot_web.sessions import Logouts, Sessions, follow_logouts, signing_secret
from thalos_bot_web.upgrade import Imports
from thalos_bot_web.wire import page_engine

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("web")
DAY = 86400.0
STOP_WRITES = 5.0
"""Seconds a stopping daemon waits for the answers queued to reach the page (on
replicas: its last page events to reach the store)."""
DRAIN = 1.0
"""Replicas: seconds a stopping daemon's listener answers ``/readyz`` with 503 before it
closes, so that the balancer (checking it every 250 ms, deploy/haproxy.cfg) sends every
new request to another replica first: closing a listener resets the connections it has
not accepted yet, which the balancer cannot send again (a POST is not idempotent)."""


def _too_big(name: str, mb: str) -> str:
    """A file over the limit (its name is on the page, in the message above)."""
    return f"That file is larger than {mb} MB, the most the web chat takes. Send a smaller one."


@asynccontextmanager
async def _open(config: WebConfig, host: ChannelHost) -> AsyncIterator[ChannelPair]:
    inlet = Inlet(CHANNEL)
    seats = host.seats(CHANNEL, config)
    logins, store = host.logins, host.page_events
    assert logins is not None, "the host hands every channel the daemon's logins store"
    assert store is not None, "the host hands every channel the daemon's page events"
    await store.started()  # what a process gone mid-answer left half-shown goes
    adapter = WebAdapter(
        CHANNEL,
        flush_interval=config.flush_interval,
        keep_events=config.keep_events,
        seats=seats,
        store=store,
    )
    relay = adapter.relay
    relay.imports = Imports(host.state_dir / "web")  # an older version's history files
    # In the store: a login outlives a restart; on replicas it is valid on all, and a
    # logout revokes it everywhere. The logouts so far are read before anything is served.
    logouts = Logouts()

    def woken(principal: str) -> None:
        adapter.wake(ConversationId(principal))  # logged out elsewhere: its streams end

    await logouts.read(logins, woken)
    sessions = Sessions(await signing_secret(logins), config.session_days * DAY, logouts=logouts)

    def notify(conversation: ConversationId, text: str) -> None:
        # The intake's notices: a refused file (a warning), or what a voice note said.
        inlet.notify(conversation, text, "info" if text.startswith("🎤") else "warning")

    sock = bind(config.host, config.port)
    port = sock.getsockname()[1]
    uploads = HeldFiles(UPLOAD_LIMIT, _too_big)
    try:
        async with anyio.create_task_group() as group:
            # The answers, streamed and final: the kit's engine.
            adapter.engine = page_engine(adapter, group)
            limit = config.text_file_max_chars
            intake = host.intake(inlet, uploads, group, text_file_max_chars=limit, notify=notify)
            api = None
            if config.api and host.api is not None:
                # A history's worth of text in a request's body.
                body = config.max_message_chars * 8 + 65_536
                api = host.api(CHANNEL, intake.pass_text, config.api_requests_per_minute, body)
            app = WebApp(
                config, adapter, sessions, logins, intake, uploads, group, host, seats, api
            )

            def stopping() -> None:
                adapter.asking.withdraw_all()  # no answer is heard any more
                app.draining = True  # the balancer sends no more here

            inlet.stopped = stopping
            group.start_soon(relay.run)
            group.start_soon(relay.follow)
            relay_presses(host, adapter.asking, group)
            group.start_soon(follow_logouts, logins, logouts, woken)  # replicas' logouts
            async with serving(
                app.build(),
                sock,
                header_timeout=config.header_timeout,
                max_connections=config.max_connections,
                forwarded_allow_ips=config.forwarded_allow_ips,
            ):
                url = config.base_url(port)
                log.info("web_listening", url=url)
                routed = adapter if api is None else api.first(adapter)
                yield ChannelPair(inlet, routed, f"web: serving {url}")
                app.draining = True
                if host.storage.kind == "postgresql":  # replicas: the balancer looks elsewhere
                    await anyio.sleep(DRAIN)
                with anyio.move_on_after(STOP_WRITES):
                    engine = adapter.engine
                    for chat in engine.known_chats():  # what each page was given, on it
                        await engine.outbox(chat).wait_idle()
                    await relay.written()
                adapter.close()
                if api is not None:
                    api.close()  # the API's waiting requests: 503, come back
            group.cancel_scope.cancel()
    finally:
        adapter.engine = None  # its task group is gone: answers wait for the next start
        inlet.close()
        sock.close()


plugin = Runtime(WebConfig, _open)
