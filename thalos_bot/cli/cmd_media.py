"""``thalos-bot media prune [--dry-run]``: remove the stored media no live session needs.

What goes is what the daemon's hourly prune would remove (see
:mod:`thalos_bot.media.prune`): media last sent before ``[media] retention`` ago that no
open session, and no session closed within the retention, references. One line per
item, then the total. With ``--dry-run`` nothing is removed. Safe while the daemon runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from thalos_bot.config.loader import LoadedConfig
    from thalos_bot.media.prune import PruneReport

Handler = Callable[[argparse.Namespace], int]


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    handler: Handler | None = None,
) -> argparse.ArgumentParser:
    """Add ``media`` and its subcommand to ``commands``."""
    media = commands.add_parser("media", help="prune the stored photos and files")
    actions = media.add_subparsers(dest="media_command", metavar="ACTION", required=True)
    prune = actions.add_parser(
        "prune", help="remove media no live session references, past [media] retention"
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="only list what would be removed, and the bytes"
    )
    prune.add_argument(
        "--config",
        "-c",
        type=Path,
        metavar="PATH",
        help="the bot.toml to use (default: $THALOS_BOT_CONFIG, else ./bot.toml)",
    )
    prune.set_defaults(handler=handler or run)
    return media


def size_text(size: int) -> str:
    """``1234567`` as ``1.2 MB`` (decimal units); under 1000 in bytes."""
    if size < 1000:
        return f"{size} bytes"
    value = float(size)
    for unit in ("kB", "MB"):
        value /= 1000
        if value < 1000:
            return f"{value:.1f} {unit}"
    return f"{value / 1000:.1f} GB"


def run(args: argparse.Namespace) -> int:
    """The CLI handler. Exit 0 on success (also when there is nothing to prune), 1 when
    the database cannot be used."""
    import anyio

    from thalos_bot.config.loader import load_settings
    from thalos_bot.telemetry.logging import configure_logging

    configure_logging("warning", "auto", sys.stderr)
    loaded = load_settings(args.config)
    retention = loaded.settings.media.retention
    if retention is None:
        print(f'nothing pruned: {loaded.label}: media.retention is "off" (media are kept)')
        return 0
    if loaded.settings.storage.target.kind == "postgresql":
        shared: int = anyio.run(_prune_shared, loaded, retention, args.dry_run)
        return shared
    path = loaded.database_path
    if not path.exists():
        print(f"nothing to prune: there is no database at {path}")
        return 0
    result: int = anyio.run(_prune, path, retention, args.dry_run)
    return result


async def _prune(path: Path, retention: float, dry_run: bool) -> int:
    from thalos_bot.media.prune import MediaPruner
    from thalos_bot.service.schema import ALL_MIGRATIONS
    from thalos_bot.storage.database import Database, DatabaseError

    try:
        async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
            report = await MediaPruner(db, retention).prune(dry_run=dry_run)
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return _show(report, dry_run)


async def _prune_shared(loaded: LoadedConfig, retention: float, dry_run: bool) -> int:
    """The same prune on the PostgreSQL store, one replica (or command) at a time."""
    from thalos_bot.cli import state
    from thalos_bot.storage.database import DatabaseError
    from thalos_bot.storage.pg.database import PgDatabase
    from thalos_bot.storage.pg.media_prune import PgMediaPruner

    try:
        async with state.opened(loaded) as stores:
            assert stores is not None  # a server is always asked
            assert isinstance(stores.shared, PgDatabase)
            report = await PgMediaPruner(stores.shared, retention).prune(dry_run=dry_run)
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return _show(report, dry_run)


def _show(report: PruneReport, dry_run: bool) -> int:
    verb = "would remove" if dry_run else "removed"
    for item in report.removed:
        kind = f" ({item.kind})" if item.kind else ""
        print(
            f"{verb} {item.hash[:16]} {item.media_type}{kind}, {size_text(item.size)}, "
            f"last sent {item.stored_at:%Y-%m-%d %H:%M} UTC"
        )
    cutoff = f"{report.cutoff:%Y-%m-%d %H:%M} UTC"
    if not report.removed:
        print(f"nothing to prune: every stored item is newer than {cutoff} or still in use")
        return 0
    freed = "would free" if dry_run else "freed"
    count = len(report.removed)
    print(
        f"{verb} {count} item{'s' if count != 1 else ''}, {freed} "
        f"{size_text(report.bytes_freed)} ({report.bytes_freed:,} bytes); "
        f"kept: what is newer than {cutoff} or still in use"
    )
    return 0
