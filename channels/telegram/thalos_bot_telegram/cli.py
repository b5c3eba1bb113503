"""``thalos-bot telegram pair``: the Telegram channel's own subcommands.

Registered through the ``thalos_bot.commands`` entry-point group, so the core CLI adds
them without importing python-telegram-bot; this module imports nothing heavy until a
command runs.
"""

from __future__ import annotations

import argparse

from thalos_bot.channels.admission.pair_cli import register_pair


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    register_pair(
        commands,
        "telegram",
        title="Telegram",
        finds="your Telegram id",
        module="thalos_bot_telegram.pair_command",
    )
