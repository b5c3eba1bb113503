"""``thalos-bot audit [--since …]``: the permission gate's decisions, oldest first.

One line per decision: when, the conversation (or session, when nobody was asked), the
tool, the decision, who or what decided, and the start of the arguments' hash. Argument
values are never stored, so they cannot be shown.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from thalos_bot.config.loader import LoadedConfig

_AGO = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """``30m``, ``24h``, ``7d``, ``2w`` ago, or an ISO date or date-time (UTC if naive)."""
    now = now or datetime.now(UTC)
    ago = _AGO.match(text.strip().lower())
    if ago:
        return now - timedelta(**{_UNITS[ago.group(2)]: int(ago.group(1))})
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a time ago such as 24h or 7d, or a date such as 2026-12-01"
        ) from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = commands.add_parser("audit", help="list the tool approval decisions")
    audit.add_argument(
        "--since", type=parse_since, metavar="WHEN", help="24h, 7d, or a date (default: all)"
    )
    audit.add_argument("--limit", type=int, default=1000, help="at most this many (1000)")
    audit.add_argument(
        "--config",
        "-c",
        type=Path,
        metavar="PATH",
        help="the bot.toml to use (default: $THALOS_BOT_CONFIG, else ./bot.toml)",
    )
    audit.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import anyio

    from thalos_bot.cli import state
    from thalos_bot.config.loader import load_settings
    from thalos_bot.storage.database import DatabaseError
    from thalos_bot.telemetry.logging import configure_logging

    configure_logging("warning", "auto", sys.stderr)
    loaded = load_settings(args.config)
    if not state.exists(loaded):
        print(f"no decisions: there is no database at {loaded.database_path}")
        return 0
    try:
        lines: list[str] = anyio.run(_lines, loaded, args.since, args.limit)
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines) if lines else "no decisions")
    return 0


async def _lines(loaded: LoadedConfig, since: datetime | None, limit: int) -> list[str]:
    from thalos_bot.cli import state

    async with state.opened(loaded) as stores:
        entries = [] if stores is None else await stores.audit_search.since(since, limit=limit)
    return [
        f"{e.at:%Y-%m-%d %H:%M:%S}  {e.conversation or e.session_id}  {e.tool}  "
        f"{e.decision}  by {e.decided_by}  args {e.arguments_hash[:12]}"
        for e in entries
    ]
