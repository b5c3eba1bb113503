"""``thalos-bot db copy --to postgresql://…``: move an existing SQLite state onto a
PostgreSQL server, before pointing ``[storage] url`` at it.

The source is the SQLite file the configuration names (or ``--from PATH``); the target
is migrated first, must hold no state yet, and receives everything in one transaction
(see :mod:`thalos_bot.storage.pg.copy`). One line per table, then the total. Stop the
daemon first: a turn committed during the copy would be missing from it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

Handler = Callable[[argparse.Namespace], int]


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    handler: Handler | None = None,
) -> argparse.ArgumentParser:
    """Add ``db`` and its subcommand to ``commands``."""
    db = commands.add_parser("db", help="move the state between databases")
    actions = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    copy = actions.add_parser("copy", help="copy the SQLite state into an empty PostgreSQL")
    copy.add_argument(
        "--to", required=True, metavar="URL", help="postgresql://user@host:port/database"
    )
    copy.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="PATH",
        help="the SQLite file to copy (default: the one the configuration names)",
    )
    copy.add_argument(
        "--config",
        "-c",
        type=Path,
        metavar="PATH",
        help="the bot.toml to use (default: $THALOS_BOT_CONFIG, else ./bot.toml)",
    )
    copy.set_defaults(handler=handler or run)
    return db


def run(args: argparse.Namespace) -> int:
    """Exit 0 when copied, 1 when either database cannot be used or the target is not
    empty, 2 for a bad URL or configuration."""
    import anyio

    from thalos_bot.config.loader import load_settings
    from thalos_bot.config.storage import parse_storage_url

    try:
        target = parse_storage_url(
            args.to, where="on the command line (ps and shell history show it)"
        )
    except ValueError as exc:
        print(f"error: --to: {exc}", file=sys.stderr)
        return 2
    if target.kind != "postgresql" or target.url is None:
        print("error: --to: must be a postgresql:// url", file=sys.stderr)
        return 2
    source: Path | None = args.source
    if source is None:
        loaded = load_settings(args.config)
        if loaded.settings.storage.target.kind == "postgresql":
            print(
                f"error: {loaded.label}: storage.url already names PostgreSQL; name the "
                "SQLite file to copy with --from",
                file=sys.stderr,
            )
            return 2
        source = loaded.database_path
    if not source.is_file():
        print(f"error: --from: there is no SQLite database at {source}", file=sys.stderr)
        return 1
    result: int = anyio.run(_copy, source, target.url)
    return result


async def _copy(source: Path, url: str) -> int:
    from thalos_bot.service.schema import ALL_MIGRATIONS
    from thalos_bot.storage.database import Database, DatabaseError
    from thalos_bot.storage.pg.copy import CopiedTable, CopyError, copy_state
    from thalos_bot.storage.pg.database import PgDatabase

    def said(table: CopiedTable) -> None:
        print(f"copied {table.name}: {table.rows} row{'s' if table.rows != 1 else ''}")

    try:
        async with (
            await Database.open(source, migrations=ALL_MIGRATIONS) as sqlite,
            await PgDatabase.open(url) as pg,
        ):
            report = await copy_state(sqlite, pg, on_table=said)
    except (DatabaseError, CopyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(
        f"copied {report.rows} rows in {len(report.tables)} tables from {source} to "
        f"{pg.location}; set [storage] url to it and start the daemon"
    )
    return 0
