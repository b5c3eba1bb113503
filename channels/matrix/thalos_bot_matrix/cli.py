"""``thalos-bot matrix pair``: the Matrix channel's own subcommands.

Registered through the ``thalos_bot.commands`` entry-point group, so the core CLI adds
them without importing the channel; nothing heavy is imported until a command runs.
"""

from __future__ import annotations

import argparse

from thalos_bot.channels.admission.pair_cli import register_pair


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    register_pair(
        commands,
        "matrix",
        title="Matrix",
        finds="your Matrix id",
        module="thalos_bot_matrix.pair_command",
    )
