"""``thalos-bot web pair``: a one-time login link for the web page.

Registered through the ``thalos_bot.commands`` entry-point group. The code is written
(as a hash) to the daemon's store, as the core's commands write there (its SQLite file
while it runs; with ``[storage] url`` on PostgreSQL the shared store, so every replica
takes it).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from thalos_bot.channels.admission.pair_cli import config_option
from thalos_bot.channels.ports import EXIT_CONFIG

if TYPE_CHECKING:
    from thalos_bot.config.loader import LoadedConfig
    from thalos_bot_web.pairing import Issued

EXIT_STATE = 1
SERVICE_STATE = Path("/var/lib/thalos-bot")
"""Where the system service (``service install``) keeps its state."""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    web = commands.add_parser("web", help="set up the web channel")
    actions = web.add_subparsers(dest="web_command", metavar="ACTION", required=True)
    pair = actions.add_parser("pair", help="print a one-time login link (valid 10 minutes)")
    config_option(pair, "the bot.toml")
    pair.add_argument(
        "--principal", "-p", help="who logs in with it (default: the first of principals)"
    )
    pair.set_defaults(handler=_run_pair, quiet_logs=True)


def _run_pair(args: argparse.Namespace) -> int:
    from thalos_bot.channels.admission.pairing import CODE_TTL
    from thalos_bot.channels.registry import validate_channels
    from thalos_bot.config.loader import ConfigError, load_settings
    from thalos_bot.domain.codes import shown
    from thalos_bot.storage.database import DatabaseError
    from thalos_bot_web.config import WebConfig

    try:
        loaded = load_settings(args.config)
        configs = validate_channels(loaded.settings, loaded.label)
    except ConfigError as exc:
        sys.stderr.write("".join(f"error: {problem}\n" for problem in exc.problems))
        return EXIT_CONFIG
    config = configs.get("web")
    if not isinstance(config, WebConfig):
        sys.stderr.write(
            f"error: {loaded.label} has no [channels.web] section; add one "
            "(enabled = true) or run `thalos-bot init`\n"
        )
        return EXIT_CONFIG
    principal = args.principal or config.principals[0]
    if principal not in config.principals:
        sys.stderr.write(
            f"error: {principal!r} is not in channels.web.principals "
            f"({', '.join(config.principals)}); add it there first\n"
        )
        return EXIT_CONFIG
    shared = loaded.settings.storage.target.kind == "postgresql"
    missed = None if shared else _missed_service(loaded.state_dir)
    if missed is not None:
        sys.stderr.write(
            f"note: the code goes to {loaded.state_dir}, but a system service reads "
            f'{missed}; if the service serves the page, add state_dir = "{missed}" to '
            f"{loaded.label} (or run with THALOS_BOT_STATE_DIR={missed}) and pair again\n"
        )
    try:
        issued = anyio.run(_issue, loaded, principal)
    except DatabaseError as exc:
        sys.stderr.write(f"error: cannot write the login code: {exc}\n")
        return EXIT_STATE
    if issued is None:
        where = loaded.database_path
        sys.stderr.write(f"error: there is no database at {where} yet; start the daemon once\n")
        return EXIT_STATE
    code = shown(issued.code)
    minutes = int(CODE_TTL // 60)
    lines = [
        f"Open this link to log in as {principal} (valid {minutes} minutes, once):",
        f"  {config.base_url()}/login?code={issued.code}",
        f"or type the code {code} on the page.",
    ]
    if not loaded.settings.channels.get("web", {}).get("enabled", False):
        lines.append("note: [channels.web] is not enabled; set enabled = true and start the daemon")
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


async def _issue(loaded: LoadedConfig, principal: str) -> Issued | None:
    """A code in the daemon's store (None: its SQLite file is not made yet)."""
    from thalos_bot.channels.logins import daemon_logins
    from thalos_bot_web.pairing import LoginCodes

    async with daemon_logins(loaded) as logins:
        return None if logins is None else await LoginCodes(logins).issue(principal)


def _missed_service(state_dir: Path) -> Path | None:
    """The system service's state folder, when root wrote the code somewhere else (a
    ``bot.toml`` from before ``service install`` named the folder in it)."""
    if os.geteuid() != 0 or not SERVICE_STATE.is_dir():
        return None
    if state_dir.resolve() == SERVICE_STATE.resolve():
        return None
    return SERVICE_STATE
