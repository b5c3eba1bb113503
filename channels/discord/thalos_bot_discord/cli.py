"""``thalos-bot discord pair``: the Discord channel's own subcommands.

Registered through the ``thalos_bot.commands`` entry-point group, so the core CLI adds
them without importing discord.py; this module imports nothing heavy until a command runs.
"""

from __future__ import annotations

import argparse

from thalos_bot.channels.admission.pair_cli import register_pair


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    register_pair(
        commands,
        "discord",
        title="Discord",
        finds="your Discord id",
        module="thalos_bot_discord.pair",
    )
