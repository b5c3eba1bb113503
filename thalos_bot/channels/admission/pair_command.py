"""What every transport's ``thalos-bot <channel> pair`` shares around its wait for the
code: finding ``bot.toml``, reading the channel's section as if it were off (before
pairing it may list nobody), asking in the terminal, and adding the sender once they
are confirmed. The transport keeps only its own part: connecting, and recognising the
code in a private message.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel

from thalos_bot.channels.admission.config_edit import add_allowed
from thalos_bot.config.loader import display_path, find_config, read_toml, validate

Ask = Callable[[str], Awaitable[bool]]
Show = Callable[[str], None]
EXIT_NOT_ADDED = 1
EXIT_CONFIG = 2
M = TypeVar("M", bound=BaseModel)


def config_file(named: Path | None) -> Path | None:
    """The bot.toml to add the person to, or None (said on stderr) when there is none."""
    path = find_config(named)
    if path is None or not path.is_file():
        where = f"{path}" if path is not None else "./bot.toml"
        sys.stderr.write(
            f"error: there is no {where} to add you to; write one with `thalos-bot init` "
            "(or name it with --config)\n"
        )
        return None
    return path


def run_pair(args: argparse.Namespace, pair: Callable[..., Awaitable[int]]) -> int:
    """Run ``pair`` for the ``bot.toml`` the arguments name; the process's exit code."""
    path = config_file(args.config)
    if path is None:
        return EXIT_CONFIG
    result: int = anyio.run(lambda: pair(path, yes=args.yes, ask=terminal_ask()))
    return result


def terminal_ask() -> Ask | None:
    """A question asked in the terminal, or None when nobody is there to answer."""
    return _ask_in_terminal if sys.stdin.isatty() and sys.stdout.isatty() else None


async def _ask_in_terminal(question: str) -> bool:
    try:
        answer = await anyio.to_thread.run_sync(input, question)
    except EOFError:
        return False
    return answer.strip().lower() in {"y", "yes"}


PAIRED = "You're paired: I'll answer you here from now on (once the daemon runs)."
"""Sent to the person once they are listed."""


def expired(channel: str) -> str:
    """What the terminal shows when nobody sent the code in time."""
    return f"The code expired before anyone sent it; run `thalos-bot {channel} pair` again."


def show_line(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def section_while_pairing(path: Path, model: type[M], channel: str) -> M:
    """``[channels.<channel>]`` validated as if off; errors name the file and the key."""
    raw: dict[str, Any] = read_toml(path)
    channels = raw.get("channels")
    section = channels.get(channel, {}) if isinstance(channels, dict) else {}
    if not isinstance(section, dict):
        section = {}
    return validate(model, {**section, "enabled": False}, display_path(path), f"channels.{channel}")


async def confirm_and_add(
    path: Path,
    person: int | str,
    *,
    channel: str,
    title: str,
    described: str,
    yes: bool,
    ask: Ask | None,
    show: Show,
    key: str = "allowed_users",
) -> bool:
    """Show who sent the code, ask (unless ``yes``), then add ``person`` to
    ``[channels.<channel>] <key>`` in ``path``; True when they are listed now."""
    label = display_path(path)
    show(f"The code came from {described}.")
    if not yes:
        if ask is None:
            listed = f'"{person}"' if isinstance(person, str) else str(person)  # as in TOML
            show(
                f"Not added: there is no terminal to ask. Run again with --yes, or add "
                f"{listed} to {key} under [channels.{channel}] in {label}."
            )
            return False
        if not await ask(f"Allow them to talk to the bot (add {person} to {label})? [y/N] "):
            show(f"Not added; {label} is unchanged.")
            return False
    added = add_allowed(path, channel, key, person)
    if added.already_listed:
        show(f"{person} was already in {key} in {label}.")
    else:
        show(f"Added {person} to {key} in {label}.")
    if added.enabled_now:
        show(f"The {title} channel is now enabled.")
    show("Next: `thalos-bot run` (or restart the service) and say hello to the bot.")
    return True
