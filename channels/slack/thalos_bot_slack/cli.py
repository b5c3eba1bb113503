"""``thalos-bot slack pair``: the Slack channel's own subcommands.

Registered through the ``thalos_bot.commands`` entry-point group, so the core CLI adds
them without importing slack-bolt; this module imports nothing heavy until a command runs.
"""

from __future__ import annotations

import argparse

from thalos_bot.channels.admission.pair_cli import register_pair


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    register_pair(
        commands,
        "slack",
        title="Slack",
        finds="your Slack member id",
        module="thalos_bot_slack.pair",
    )
