"""``thalos-bot slack pair``: the kit's flow
(:func:`~thalos_bot.channels.admission.pair_command.pair_with`) around Slack's part: it
connects over Socket Mode as the app and waits for a direct message to the bot holding
the code (nobody is answered meanwhile), then tells the sender in that DM. Every
envelope is acknowledged, so Slack redelivers nothing to the daemon later.
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
from thalos_bot_slack.client import (
    UNANSWERED,
    build_client,
    check_app_token,
    identify,
    read_tokens,
    socket_mode,
)
from thalos_bot_slack.config import SlackConfig
from thalos_bot_slack.manifest import manifest


@dataclass
class SlackSide(kit.Hearing):
    config: SlackConfig
    client: AsyncWebClient
    tokens: tuple[str, str] = field(repr=False)
    handler: AsyncSocketModeHandler | None = None

    async def reach(self) -> str:
        """A token Slack refuses ends the command with the daemon's exit code for it."""
        identity = await identify(self.client)
        await check_app_token(self.config, self.tokens[0])
        self.handler = socket_mode(self.config, self.client, self.tokens, identity, self.attach)
        await self.handler.connect_async()  # type: ignore[no-untyped-call]
        return f"<@{identity['user_id']}> in a direct message"

    def attach(self, app: AsyncApp) -> None:
        app.event("message")(self._on_message)

    async def _on_message(self, event: dict[str, Any]) -> None:
        """A person's direct message may hold the code."""
        if event.get("channel_type") != "im" or event.get("bot_id") or event.get("subtype"):
            return
        user, channel = event.get("user"), event.get("channel")
        if isinstance(user, str) and isinstance(channel, str):
            text = str(event.get("text") or "")
            self.awaited.hear(text, lambda: kit.Found(user, f"member {user}", channel))

    async def tell(self, found: kit.Found) -> bool:
        send = self.client.chat_postMessage(channel=str(found.reply_to), text=kit.PAIRED)
        return await kit.told(send, (SlackApiError, *UNANSWERED))


@asynccontextmanager
async def _side(config: SlackConfig) -> AsyncIterator[SlackSide]:
    tokens = read_tokens()
    side = SlackSide(config, build_client(tokens[1], config), tokens)
    try:
        yield side
    finally:
        if side.handler is not None:
            with anyio.CancelScope(shield=True):
                await side.handler.close_async()  # type: ignore[no-untyped-call]


pair = kit.pair_command(_side, manifest)
"""Pair, then add the sender to the ``bot.toml`` named. Returns the process exit code."""
