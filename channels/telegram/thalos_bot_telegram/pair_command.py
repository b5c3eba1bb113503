"""What ``thalos-bot telegram pair`` does, step by step, around :mod:`.pairing`."""

from __future__ import annotations

import re
import time
from pathlib import Path

from telegram import Bot
from telegram.error import TelegramError

from thalos_bot.channels.admission.pair_command import (
    EXIT_CONFIG,
    EXIT_NOT_ADDED,
    Ask,
    Show,
    confirm_and_add,
    section_while_pairing,
    show_line,
)
from thalos_bot.channels.admission.pairing import CODE_TTL, Clock, PairingCode, PairingError
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.client import (
    build_bot,
    quiet_transport_loggers,
    read_token,
    start_bot_explained,
)
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.pairing import Person, wait_for_code

__all__ = ["EXIT_CONFIG", "EXIT_NOT_ADDED", "PAIRED", "pair"]
TOKEN_SHAPE = re.compile(r"\d{3,}:[A-Za-z0-9_-]{20,}")
"""What @BotFather hands out (``123456789:AAE...``): refused before any network call."""


def pairing_config(path: Path) -> TelegramConfig:
    """The ``[channels.telegram]`` settings pairing uses (base_url, timeouts)."""
    return section_while_pairing(path, TelegramConfig, "telegram")


async def pair(
    path: Path,
    *,
    yes: bool,
    ask: Ask | None,
    show: Show = show_line,
    clock: Clock = time.monotonic,
) -> int:
    """Pair, then add the sender to ``path``. Returns the process exit code."""
    config = pairing_config(path)
    try:
        token = read_token()
    except ChannelFatalError as exc:
        show(f"error: {exc.message}")
        return exc.exit_code
    if not TOKEN_SHAPE.fullmatch(token):
        show(
            f"error: {TOKEN_ENV} does not look like a bot token (digits, a colon, then about "
            "35 letters, digits, - or _); copy it again from @BotFather (/mybots → API Token)"
        )
        return EXIT_CONFIG
    quiet_transport_loggers()
    bot = build_bot(token, config)
    try:
        username, cause = await start_bot_explained(bot)
    except ChannelFatalError as exc:
        show(f"error: {exc.message}")
        return exc.exit_code
    try:
        if username is None:
            where = config.base_url or "https://api.telegram.org"
            show(
                f"error: Telegram cannot be reached at {where}: {cause}; "
                "check the network (or base_url), then try again"
            )
            return EXIT_NOT_ADDED
        code = PairingCode(clock=clock)
        minutes = round(CODE_TTL / 60)
        show(f"Send this code to @{username} in a private chat within {minutes} minutes:")
        show(f"\n    {code.shown}\n")
        show("Waiting for it (Ctrl-C stops). The bot answers nobody while it waits.")
        try:
            person = await wait_for_code(
                bot, code, poll_timeout=config.poll_timeout, request_timeout=config.request_timeout
            )
        except PairingError as exc:
            show(f"error: {exc.message}")
            return EXIT_NOT_ADDED
        outcome = await _allow(path, person, yes=yes, ask=ask, show=show)
        if outcome == 0:
            await _confirm(bot, person.user_id, show)
        return outcome
    finally:
        await bot.shutdown()


PAIRED = (
    "You're paired: this bot now answers you. (If it does not yet, it is not running: "
    "`thalos-bot run`, or restart the service.)"
)


async def _confirm(bot: Bot, user_id: int, show: Show) -> None:
    """Say so in the chat too: the person who sent the code sees that it worked."""
    try:
        await bot.send_message(user_id, PAIRED)
    except TelegramError:
        show("(Telegram did not take the confirmation message; the pairing itself is done.)")


async def _allow(path: Path, person: Person, *, yes: bool, ask: Ask | None, show: Show) -> int:
    """Ask (unless ``yes``), then add ``person`` to ``path``; the exit code."""
    allowed = await confirm_and_add(
        path,
        person.user_id,
        channel="telegram",
        title="Telegram",
        key="allowed_user_ids",
        described=person.describe(),
        yes=yes,
        ask=ask,
        show=show,
    )
    return 0 if allowed else EXIT_NOT_ADDED
