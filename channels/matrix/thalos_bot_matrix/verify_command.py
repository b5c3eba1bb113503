"""``thalos-bot matrix verify``: the operator's side of emoji verification. It shows
each verification the running daemon waits on (who, which device, the seven emoji) and
asks whether they match what the user's client shows; a yes is written for the daemon,
which sends its confirmation at its next sync (within ``sync_timeout``). A no, or no
answer, leaves it waiting (the user's client cancels it in time)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from thalos_bot.channels.admission import pair_command as kit
from thalos_bot.channels.admission.pair_cli import config_option
from thalos_bot.channels.ports import EXIT_CONFIG
from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot_matrix import sas_pending
from thalos_bot_matrix.config import MatrixConfig


def register(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = actions.add_parser(
        "verify", help="confirm the emoji of a verification the daemon waits on"
    )
    config_option(command, "the bot.toml to read")
    command.add_argument(
        "--yes", action="store_true", help="confirm every waiting verification without asking"
    )

    def run(args: argparse.Namespace) -> int:
        path = kit.config_file(args.config)
        if path is None:
            return EXIT_CONFIG
        ask = (lambda _q: "y") if args.yes else input
        return verify(path, ask=ask)

    command.set_defaults(handler=run, quiet_logs=True)


def verify(path: Path, *, ask: Callable[[str], str], out: TextIO | None = None) -> int:
    """The command's work; the exit code (0, also when nothing waits)."""
    config = kit.section_while_pairing(path, MatrixConfig, "matrix")
    if not config.user_id:
        raise ConfigError(["set user_id under [channels.matrix] first"])
    file = sas_pending.path(load_settings(path).state_dir, config.user_id)
    return confirm_waiting(file, ask=ask, out=out)


def confirm_waiting(file: Path, *, ask: Callable[[str], str], out: TextIO | None = None) -> int:
    """Each waiting verification in ``file`` shown, and confirmed if the answer is yes."""
    write = (out or sys.stdout).write
    waiting = {t: i for t, i in sas_pending.load(file).items() if not i.get("confirmed")}
    if not waiting:
        write("No verification is waiting. Start one from your client (Verify with emoji).\n")
        return 0
    for txn, item in waiting.items():
        write(f"\n{item.get('user')} (device {item.get('device')}) shows:\n\n")
        write(f"    {item.get('emoji')}\n\n")
        if ask("Do these match what your client shows? [y/N] ").strip().lower() in {"y", "yes"}:
            sas_pending.confirm(file, txn)
            write("Confirmed: the bot finishes the verification at its next sync.\n")
        else:
            write("Not confirmed (cancel it in your client if they differ).\n")
    return 0
