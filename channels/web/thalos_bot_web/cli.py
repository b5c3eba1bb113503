"""``thalos-bot web pair``: a one-time login link for the web page.

Registered through the ``thalos_bot.commands`` entry-point group. The code is written
(as a hash) to the state folder the daemon reads, so the command works while the daemon
runs, and needs no network; with ``[storage] url`` on PostgreSQL, to the shared store,
so every replica takes it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from thalos_bot.channels.ports import EXIT_CONFIG

if TYPE_CHECKING:
    from thalos_bot_web.pairing import Issued

EXIT_STATE = 1
SERVICE_STATE = Path("/var/lib/thalos-bot")
"""Where the system service (``service install``) keeps its state."""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    web = commands.add_parser("web", help="set up the web channel")
    actions = web.add_subparsers(dest="web_command", metavar="ACTION", required=True)
    pair = actions.add_parser("pair", help="print a one-time login link (valid 10 minutes)")
    pair.add_argument(
        "--config",
        "-c",
        type=Path,
        metavar="PATH",
        help="the bot.toml (default: $THALOS_BOT_CONFIG, else ./bot.toml)",
    )
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
    from thalos_bot_web.pairing import FILE_NAME, PairingBook

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
    target = loaded.settings.storage.target
    if target.kind == "postgresql" and target.url is not None:
        # Replicas: the code goes to the shared store, so every replica takes it.
        try:
            issued = anyio.run(_issue_shared, target.url, principal)
        except DatabaseError as exc:
            sys.stderr.write(f"error: cannot write the login code to the store: {exc}\n")
            return EXIT_STATE
    else:
        try:
            issued = PairingBook(loaded.state_dir).issue(principal)
        except OSError as exc:
            where = loaded.state_dir / FILE_NAME
            sys.stderr.write(f"error: cannot write the login code to {where}: {exc.strerror}\n")
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
    missed = _missed_service(loaded.state_dir) if target.kind != "postgresql" else None
    if missed is not None:
        sys.stderr.write(
            f"note: the code went to {loaded.state_dir}, but a system service reads "
            f'{missed}; if the service serves the page, add state_dir = "{missed}" to '
            f"{loaded.label} (or run with THALOS_BOT_STATE_DIR={missed}) and pair again\n"
        )
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    return 0


async def _issue_shared(url: str, principal: str) -> Issued:
    import psycopg

    from thalos_bot.cluster.web_logins import PgLogins
    from thalos_bot.storage.database import DatabaseError
    from thalos_bot.storage.pg.database import PgDatabase
    from thalos_bot_web.pairing import SharedCodes

    # No migrations from here: the daemon makes the tables (and knows all of them).
    async with await PgDatabase.open(url, pool_size=1, apply=False) as db:
        try:
            return await SharedCodes(PgLogins(db)).issue(principal)
        except psycopg.errors.UndefinedTable:
            raise DatabaseError(db.location, "start the daemon once first") from None
        except psycopg.Error as exc:
            raise DatabaseError(db.location, type(exc).__name__) from exc


def _missed_service(state_dir: Path) -> Path | None:
    """The system service's state folder, when root wrote the code somewhere else (a
    ``bot.toml`` from before ``service install`` named the folder in it)."""
    if os.geteuid() != 0 or not SERVICE_STATE.is_dir():
        return None
    if state_dir.resolve() == SERVICE_STATE.resolve():
        return None
    return SERVICE_STATE
