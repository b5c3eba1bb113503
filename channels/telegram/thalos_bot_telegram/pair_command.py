"""What ``thalos-bot telegram pair`` does: the kit's flow
(:func:`~thalos_bot.channels.admission.pair_command.pair_with`) around Telegram's part,
a temporary long poll for the code (:mod:`.pairing`)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from telegram import Bot
from telegram.error import TelegramError

from thalos_bot.channels.admission import pair_command as kit
from thalos_bot.channels.admission import pairing
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.client import (
    build_bot,
    quiet_transport_loggers,
    read_token,
    start_bot_explained,
)
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.manifest import manifest
from thalos_bot_telegram.pairing import wait_for_code

__all__ = ["pair"]
TOKEN_SHAPE = re.compile(r"\d{3,}:[A-Za-z0-9_-]{20,}")
"""What @BotFather hands out (``123456789:AAE...``): refused before any network call."""


@dataclass
class TelegramSide:
    config: TelegramConfig
    bot: Bot

    async def reach(self) -> str:
        username, cause = await start_bot_explained(self.bot)
        if username is None:
            where = self.config.base_url or "https://api.telegram.org"
            raise pairing.PairingError(
                f"Telegram cannot be reached at {where}: {cause}; "
                "check the network (or base_url), then try again"
            )
        return f"@{username} in a private chat"

    async def wait(self, code: pairing.PairingCode) -> kit.Found | None:
        config = self.config
        return await wait_for_code(
            self.bot, code, poll_timeout=config.poll_timeout, request_timeout=config.request_timeout
        )

    async def tell(self, found: kit.Found) -> bool:
        """Say so in the chat too: the person who sent the code sees that it worked."""
        assert isinstance(found.person, int)
        return await kit.told(self.bot.send_message(found.person, kit.PAIRED), TelegramError)


@asynccontextmanager
async def _side(config: TelegramConfig) -> AsyncIterator[TelegramSide]:
    """What pairing uses of the ``[channels.telegram]`` settings: base_url, timeouts."""
    token = read_token()
    if not TOKEN_SHAPE.fullmatch(token):
        raise ChannelFatalError(
            f"{TOKEN_ENV} does not look like a bot token (digits, a colon, then about 35 "
            "letters, digits, - or _); copy it again from @BotFather (/mybots → API Token)",
            kit.EXIT_CONFIG,
        )
    quiet_transport_loggers()
    bot = build_bot(token, config)
    try:
        yield TelegramSide(config, bot)
    finally:
        await bot.shutdown()


pair = kit.pair_command(_side, manifest)
"""Pair, then add the sender to the ``bot.toml`` named. Returns the process exit code."""
