"""``thalos-bot init``'s arguments. The command itself (:mod:`.cmd_init`, with the
sample, the transports' questions and the offers after it) loads only when ``init``
runs or its flags are listed, so every other command starts without it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

OWN_FLAGS = frozenset({"folder", "model", "state_dir", "force", "handler", "command"})
"""``init``'s own arguments: no transport's flag may take one of these names."""


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    handler: Callable[[argparse.Namespace], int],
    flags: bool = True,
) -> None:
    """Add ``init``; ``flags=False`` (another command runs) leaves out the flag of each
    transport, which loads every channel plug-in to find them."""
    init = commands.add_parser("init", help="write a commented bot.toml to start from")
    init.add_argument(
        "folder", nargs="?", type=Path, default=Path(), help="where to write bot.toml (.)"
    )
    init.add_argument("--model", help="the Claude model (default: the sample's)")
    if flags:
        from thalos_bot.channels.registry import shipped_channels
        from thalos_bot.cli.cmd_init import transports

        setups = transports()
        shipped = shipped_channels()
        for name in [*setups, *(n for n in shipped if n not in setups)]:
            if name in OWN_FLAGS or name == "console":
                continue
            chosen = init.add_mutually_exclusive_group()
            chosen.add_argument(
                f"--{name}", action="store_true", default=None, help=f"set up the {name} channel"
            )
            chosen.add_argument(f"--no-{name}", dest=name, action="store_false")
    init.add_argument(
        "--state-dir", metavar="PATH", help="where the database lives, relative to bot.toml"
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing bot.toml")
    init.set_defaults(handler=handler)
