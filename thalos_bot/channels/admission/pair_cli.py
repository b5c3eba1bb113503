"""``thalos-bot <channel> pair`` on the command line, the same for every transport.

A transport registers it through the ``thalos_bot.commands`` entry-point group with
:func:`register_pair`, naming the module whose ``pair(path, *, yes, ask)`` does its
part; nothing of that module (nor its platform library) is imported until the command
runs.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path


def config_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--config PATH`` (``-c``): ``what`` the command reads, with the default said."""
    parser.add_argument(
        "--config",
        "-c",
        type=Path,
        metavar="PATH",
        help=f"{what} (default: $THALOS_BOT_CONFIG, else ./bot.toml)",
    )


def register_pair(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    channel: str,
    *,
    title: str,
    finds: str,
    module: str,
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """``thalos-bot <channel> pair [--config PATH] [--yes]``; ``finds`` names what the
    code finds ("your Telegram id"), ``module`` holds the transport's ``pair``. Returns
    the channel's actions, for a transport to add its own beside ``pair``."""
    parser = commands.add_parser(channel, help=f"set up the {title} channel")
    actions = parser.add_subparsers(dest=f"{channel}_command", metavar="ACTION", required=True)
    pair = actions.add_parser(
        "pair", help=f"find {finds} with a one-time code and allow it in bot.toml"
    )
    config_option(pair, "the bot.toml to edit")
    pair.add_argument(
        "--yes", "-y", action="store_true", help="add whoever sends the code without asking"
    )

    def run(args: argparse.Namespace) -> int:
        from thalos_bot.channels.admission.pair_command import run_pair

        return run_pair(args, importlib.import_module(module).pair)

    # The command says what went wrong in its own words; log lines would only interleave.
    pair.set_defaults(handler=run, quiet_logs=True)
    return actions
