"""Subcommands that channel packages add through the ``thalos_bot.commands`` entry-point
group (e.g. ``thalos-bot telegram pair`` from the Telegram channel), so the core never
imports a channel's libraries.

An entry point names a ``register(commands)`` callable that adds its parsers to the
``thalos-bot`` subparsers. A transport the project ships (the sample ``bot.toml`` has
its table) that is not installed still has its subcommand, which says how to install it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from importlib.metadata import entry_points
from typing import Any, TypeAlias

import structlog

from thalos_bot.channels.registry import install_hint, shipped_channels

log = structlog.get_logger(__name__)

COMMANDS_GROUP = "thalos_bot.commands"
Register: TypeAlias = Callable[[Any], None]
"""``register(commands)``: adds parsers to the ``thalos-bot`` subcommands."""


def register_plugin_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    names: set[str] = set()
    for entry in entry_points(group=COMMANDS_GROUP):
        try:
            register: Register = entry.load()
            register(commands)
        except Exception:
            log.exception("command_plugin_failed_to_load", plugin=entry.name)
            continue
        names.add(entry.name)
    for name in shipped_channels():
        if name in names or name in commands.choices:
            continue
        missing = commands.add_parser(name, help=f"set up the {name} channel (not installed)")
        missing.add_argument("rest", nargs=argparse.REMAINDER)
        missing.set_defaults(handler=partial(_not_installed, name))


def _not_installed(name: str, args: argparse.Namespace) -> int:
    print(f"error: the {name} channel is not installed; {install_hint(name)}", file=sys.stderr)
    return 2
