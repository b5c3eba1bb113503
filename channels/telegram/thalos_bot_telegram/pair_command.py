"""What ``thalos-bot telegram pair`` does, step by step, around :mod:`.pairing`."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from telegram import Bot
from telegram.error import TelegramError

from thalos_bot.channels.admission.pairing import CODE_TTL, Clock, PairingCode, PairingError
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.config.loader import display_path, find_config, read_toml, validate
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.client import (
    build_bot,
    quiet_transport_loggers,
    read_token,
    start_bot_explained,
)
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.config_edit import add_allowed_user
from thalos_bot_telegram.pairing import Person, wait_for_code

Ask = Callable[[str], Awaitable[bool]]
Show = Callable[[str], None]

EXIT_NOT_ADDED = 1
EXIT_CONFIG = 2
TOKEN_SHAPE = re.compile(r"\d{3,}:[A-Za-z0-9_-]{20,}")
"""What @BotFather hands out (``123456789:AAE...``): refused before any network call."""


def run(args: argparse.Namespace) -> int:
    path = find_config(args.config)
    if path is None or not path.is_file():
        where = f"{path}" if path is not None else "./bot.toml"
        sys.stderr.write(
            f"error: there is no {where} to add you to; write one with `thalos-bot init` "
            "(or name it with --config)\n"
        )
        return EXIT_CONFIG
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    ask = _ask_in_terminal if interactive else None
    result: int = anyio.run(lambda: pair(path, yes=args.yes, ask=ask))
    return result


async def _ask_in_terminal(question: str) -> bool:
    try:
        answer = await anyio.to_thread.run_sync(input, question)
    except EOFError:
        return False
    return answer.strip().lower() in {"y", "yes"}


def _show(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def pairing_config(path: Path) -> TelegramConfig:
    """The ``[channels.telegram]`` settings pairing uses (base_url, timeouts). The
    section is read as if off, since before pairing it may list nobody yet."""
    raw: dict[str, Any] = read_toml(path)
    channels = raw.get("channels")
    section = channels.get("telegram", {}) if isinstance(channels, dict) else {}
    if not isinstance(section, dict):
        section = {}
    return validate(
        TelegramConfig, {**section, "enabled": False}, display_path(path), "channels.telegram"
    )


async def pair(
    path: Path,
    *,
    yes: bool,
    ask: Ask | None,
    show: Show = _show,
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
    label = display_path(path)
    show(f"The code came from {person.describe()}.")
    if not yes:
        question = f"Allow them to talk to the bot (add {person.user_id} to {label})? [y/N] "
        if ask is None:
            show(
                f"Not added: there is no terminal to ask. Run again with --yes, or add "
                f"{person.user_id} to allowed_user_ids under [channels.telegram] in {label}."
            )
            return EXIT_NOT_ADDED
        if not await ask(question):
            show(f"Not added; {label} is unchanged.")
            return EXIT_NOT_ADDED
    added = add_allowed_user(path, person.user_id)
    if added.already_listed:
        show(f"{person.user_id} was already in allowed_user_ids in {label}.")
    else:
        show(f"Added {person.user_id} to allowed_user_ids in {label}.")
    if added.enabled_now:
        show("The Telegram channel is now enabled.")
    show("Next: `thalos-bot run` (or restart the service) and say hello to the bot.")
    return 0
