"""``thalos-bot slack pair``: find the owner's Slack member id with a one-time code.

It connects over Socket Mode as the app, prints a code (the kit's :class:`pairing.PairingCode`:
single use, ten minutes) and waits for a direct message to the bot holding it; nobody is
answered meanwhile, and every envelope is acknowledged, so Slack redelivers nothing to
the daemon later. The sender is shown and, once confirmed (``--yes``: at once), added to
``allowed_users`` in ``bot.toml`` (comments kept) with the section turned on; they are
told in the DM.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from thalos_bot.channels.admission import pair_command as kit
from thalos_bot.channels.admission import pairing
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot_slack.client import (
    UNANSWERED,
    SlackApi,
    build_client,
    quiet_sdk_loggers,
    read_tokens,
    sdk_logger,
)
from thalos_bot_slack.config import SlackConfig
from thalos_bot_slack.manifest import manifest
from thalos_bot_slack.plugin import authorizer, check_app_token, identify


@dataclass
class SlackSide:
    config: SlackConfig
    api: SlackApi
    tokens: tuple[str, str] = field(repr=False)
    handler: AsyncSocketModeHandler | None = None
    awaited: kit.Awaited = field(default_factory=kit.Awaited)

    async def reach(self) -> str:
        config, (app_token, bot_token) = self.config, self.tokens
        try:
            identity = await identify(self.api)
            await check_app_token(config, app_token)
        except ChannelFatalError as exc:
            raise pairing.PairingError(exc.message) from None
        app = AsyncApp(
            client=self.api.client,
            logger=sdk_logger(),
            authorize=authorizer(identity, bot_token),
            ignoring_self_events_enabled=True,
        )
        app.event("message")(self._on_message)
        self.handler = AsyncSocketModeHandler(
            app,
            app_token,
            logger=sdk_logger(),
            web_client=AsyncWebClient(
                base_url=config.base_url or AsyncWebClient.BASE_URL,
                timeout=int(max(1, config.request_timeout)),
            ),
            ping_interval=config.ping_interval,
        )
        await self.handler.connect_async()  # type: ignore[no-untyped-call]
        return f"<@{identity['user_id']}> in a direct message"

    async def _on_message(self, event: dict[str, Any]) -> None:
        """A person's direct message may hold the code."""
        if event.get("channel_type") != "im" or event.get("bot_id") or event.get("subtype"):
            return
        user, channel = event.get("user"), event.get("channel")
        if isinstance(user, str) and isinstance(channel, str):
            text = str(event.get("text") or "")
            self.awaited.hear(text, lambda: kit.Found(user, f"member {user}", channel))

    async def wait(self, code: pairing.PairingCode) -> kit.Found | None:
        return await self.awaited.wait(code)

    async def tell(self, found: kit.Found) -> bool:
        try:
            await self.api.call("chat.postMessage", channel=found.reply_to, text=kit.PAIRED)
        except (SlackApiError, *UNANSWERED):
            return False
        return True


@asynccontextmanager
async def _side(config: SlackConfig) -> AsyncIterator[SlackSide]:
    tokens = read_tokens(kit.EXIT_CONFIG)
    quiet_sdk_loggers()
    api = SlackApi(build_client(tokens[1], config))
    side = SlackSide(config, api, tokens)
    try:
        yield side
    finally:
        with anyio.CancelScope(shield=True):
            if side.handler is not None:
                await side.handler.close_async()  # type: ignore[no-untyped-call]
            await api.close()


pair = kit.pair_command(_side, manifest)
"""Pair, then add the sender to the ``bot.toml`` named. Returns the process exit code."""
