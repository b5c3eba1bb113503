"""``thalos-bot service install [--user]`` / ``service uninstall [--user]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from thalos_bot.config.loader import find_config, load_settings
from thalos_bot.service.install import InstallError, Report, install, uninstall

EXIT_REFUSED = 2


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    service = commands.add_parser("service", help="set the daemon up as a systemd service")
    actions = service.add_subparsers(dest="service_command", metavar="ACTION", required=True)
    for action, text in (
        ("install", "write the config folder, the secrets file and the unit; reload systemd"),
        ("uninstall", "stop and remove the unit, and the files install wrote unchanged"),
    ):
        sub = actions.add_parser(action, help=text)
        sub.add_argument(
            "--user", action="store_true", help="a user service (systemctl --user), no root"
        )
        sub.add_argument(
            "--root",
            type=Path,
            metavar="DIR",
            help="write under DIR instead of / (for packaging); systemd is not touched",
        )
        if action == "install":
            sub.add_argument(
                "--config",
                "-c",
                type=Path,
                metavar="PATH",
                help="the bot.toml to carry over (default: $THALOS_BOT_CONFIG, else "
                "./bot.toml, else the sample), with the secrets file beside it",
            )
            sub.add_argument(
                "--allow-home",
                action="store_true",
                help="the program lives under /home or /root: write ProtectHome=read-only",
            )
        sub.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        if args.service_command == "install":
            found = find_config(args.config)
            source = load_settings(found) if found is not None else None
            report = install(
                user=args.user, root=args.root, allow_home=args.allow_home, source=source
            )
        else:
            report = uninstall(user=args.user, root=args.root)
    except InstallError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return EXIT_REFUSED
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_REFUSED
    _show(report)
    return 0


def _show(report: Report) -> None:
    for line in [*report.done, *report.kept]:
        print(line)
    for line in report.warnings:
        print(f"warning: {line}")
    if report.next_steps:
        print("\nNext:")
        print("\n".join(f"  {step}" for step in report.next_steps))
