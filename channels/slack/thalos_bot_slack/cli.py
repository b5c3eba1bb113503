"""``thalos-bot slack pair``: the Slack channel's own subcommands.

Registered through the ``thalos_bot.commands`` entry-point group, so the core CLI adds
them without importing slack-bolt; this module imports nothing heavy until a command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    slack = commands.add_parser("slack", help="set up the Slack channel")
    actions = slack.add_subparsers(dest="slack_command", metavar="ACTION", required=True)
    pair = actions.add_parser(
        "pair", help="find your Slack member id with a one-time code and allow it in bot.toml"
    )
    pair.add_argument(
        "--config",
        "-c",
        type=Path,
        metavar="PATH",
        help="the bot.toml to edit (default: $THALOS_BOT_CONFIG, else ./bot.toml)",
    )
    pair.add_argument(
        "--yes", "-y", action="store_true", help="add whoever sends the code without asking"
    )
    pair.set_defaults(handler=_run_pair, quiet_logs=True)


def _run_pair(args: argparse.Namespace) -> int:
    from thalos_bot_slack.pair import run

    return run(args)
