"""Registers the web channel under the ``thalos_bot.channels`` entry-point group.

The server is Starlette on uvicorn. Both were already pinned for the tests (uvicorn
serves the fakes' ASGI apps), both run on the daemon's asyncio loop under anyio with no
thread of their own, and Starlette's ``StreamingResponse`` is all Server-Sent Events
need; aiohttp would have brought a second HTTP stack with its own loop conventions.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import BaseModel

from thalos_bot.channels.admission.guard import UpdateGuard
from thalos_bot.channels.intake.files import Intake, IntakeSettings
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.dashboard.deps import DashboardSources
from thalos_bot.domain.address import Address
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.media.transcription import Transcriber
from thalos_bot_web.adapter import WebAdapter
from thalos_bot_web.app import WebApp
from thalos_bot_web.config import UPLOAD_LIMIT, WebConfig, is_loopback
from thalos_bot_web.history import History
from thalos_bot_web.intake import Uploads
from thalos_bot_web.pairing import PairingBook
from thalos_bot_web.server import bind, serving
from thalos_bot_web.sessions import LOGOUTS_FILE, Logouts, Sessions, load_secret

if TYPE_CHECKING:
    from thalos_bot.channels.checks import Check

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("web")
DAY = 86400.0
TLS_NOTE = "serves other machines: put it behind a TLS proxy (HTTPS), set public_url"


class WebSource:
    def __init__(self, receive: MemoryObjectReceiveStream[InboundMessage]) -> None:
        self.channel_id = CHANNEL
        self._receive = receive

    async def messages(self) -> AsyncIterator[InboundMessage]:
        async with self._receive:
            async for message in self._receive:
                yield message


@dataclass(frozen=True, slots=True)
class WebAllowlist:
    """A web conversation is its principal's: it may be written to (a scheduled run's
    answer) while that principal may still log in."""

    principals: frozenset[str]

    def refusal(self, address: Address) -> str | None:
        if address.conversation_id in self.principals:
            return None
        return f"{address.conversation_id!r} is not in channels.web.principals"


class WebPlugin:
    name = "web"
    config_model = WebConfig

    def describe(self, config: BaseModel) -> str:
        assert isinstance(config, WebConfig)
        who = ", ".join(config.principals)
        public = f"; public: {TLS_NOTE}" if not is_loopback(config.host) else ""
        return f"a chat page on {config.base_url()} for {who}{public}"

    def allowlist(self, config: BaseModel) -> WebAllowlist:
        assert isinstance(config, WebConfig)
        return WebAllowlist(frozenset(config.principals))

    async def doctor(self, config: BaseModel, *, offline: bool) -> list[Check]:
        from thalos_bot.channels.checks import Check

        assert isinstance(config, WebConfig)
        if is_loopback(config.host):
            return [Check("web", "ok", f"listens on {config.listen} (this machine only)")]
        secure = (config.public_url or "").startswith("https://")
        return [
            Check(
                "web",
                "ok" if secure else "warn",
                f"listens on {config.listen}, reachable from other machines",
                "" if secure else 'put it behind a TLS proxy and set public_url = "https://..."',
            )
        ]

    @asynccontextmanager
    async def open(self, config: BaseModel, host: ChannelHost) -> AsyncIterator[ChannelPair]:
        assert isinstance(config, WebConfig)
        send, receive = anyio.create_memory_object_stream[InboundMessage](math.inf)
        adapter = WebAdapter(
            CHANNEL,
            flush_interval=config.flush_interval,
            keep_events=config.keep_events,
            history=History(host.state_dir / "web", config.keep_events),
        )
        sessions = Sessions(
            load_secret(host.state_dir),
            config.session_days * DAY,
            logouts=Logouts(host.state_dir / LOGOUTS_FILE),
        )

        def notify(conversation: ConversationId, text: str) -> None:
            # The intake's notices: a refused file (a warning), or what a voice note said.
            adapter.notice(conversation, text, "info" if text.startswith("🎤") else "warning")

        sock = bind(config.host, config.port)
        port = sock.getsockname()[1]
        uploads = Uploads(UPLOAD_LIMIT)
        try:
            async with anyio.create_task_group() as group:
                intake = Intake(
                    uploads,
                    group=group,
                    hand_over=lambda message: _hand_over(send, message),
                    notify=notify,
                    transcriber=_transcriber(host),
                    settings=IntakeSettings(
                        album_settle=0.0, text_file_max_chars=config.text_file_max_chars
                    ),
                    guard=UpdateGuard(self.name),
                    channel=self.name,
                )
                app = WebApp(
                    config,
                    CHANNEL,
                    adapter,
                    sessions,
                    PairingBook(host.state_dir),
                    intake,
                    uploads,
                    dashboard=host.dashboard
                    if isinstance(host.dashboard, DashboardSources)
                    else None,
                )
                async with serving(
                    app.build(),
                    sock,
                    header_timeout=config.header_timeout,
                    max_connections=config.max_connections,
                ):
                    url = config.base_url(port)
                    log.info("web_listening", url=url)
                    yield ChannelPair(WebSource(receive), adapter, f"web: serving {url}")
                    adapter.close()
                group.cancel_scope.cancel()
        finally:
            send.close()
            sock.close()


def _transcriber(host: ChannelHost) -> Transcriber | None:
    settings = host.settings.transcription
    return Transcriber(settings) if settings is not None else None


def _hand_over(send: MemoryObjectSendStream[InboundMessage], message: InboundMessage) -> None:
    try:
        send.send_nowait(message)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        log.info("web_message_dropped_at_shutdown", conversation=message.conversation_id)


plugin = WebPlugin()
