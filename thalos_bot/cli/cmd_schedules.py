"""``thalos-bot schedules list|cancel``: the operator's view of the schedules.

Unlike the model's tools, these see every owner's schedules. Cancelling takes effect in
a running daemon too: a run is claimed only while its schedule is still active.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from thalos_bot.channels.ports import DeliveryAllowlist
    from thalos_bot.config.loader import LoadedConfig
    from thalos_bot.config.subagents import ScheduleSettings

Handler = Callable[[argparse.Namespace], int]


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    handler: Handler | None = None,
) -> argparse.ArgumentParser:
    """Add ``schedules`` and its subcommands to ``commands``."""
    schedules = commands.add_parser("schedules", help="list or cancel scheduled tasks")
    actions = schedules.add_subparsers(dest="schedules_command", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="pending schedules, soonest first")
    listing.add_argument("--owner", help="only this owner's (a principal id)")
    cancel = actions.add_parser("cancel", help="cancel one schedule by its id")
    cancel.add_argument("id")
    for sub in (listing, cancel):
        sub.add_argument(
            "--config",
            "-c",
            type=Path,
            metavar="PATH",
            help="the bot.toml to use (default: $THALOS_BOT_CONFIG, else ./bot.toml)",
        )
        sub.set_defaults(handler=handler or run)
    return schedules


def run(args: argparse.Namespace) -> int:
    """The CLI handler. Exit 0 on success, 1 when the schedule or database is missing."""
    import anyio

    from thalos_bot.channels.registry import (
        ChannelAllowlists,
        allowlists,
        discover,
        validate_channels,
    )
    from thalos_bot.cli import state
    from thalos_bot.config.loader import load_settings
    from thalos_bot.telemetry.logging import configure_logging

    configure_logging("warning", "auto", sys.stderr)
    loaded = load_settings(args.config)
    if not state.exists(loaded):
        if args.schedules_command == "list" and loaded.settings.schedules:
            print("\n".join(not_synced(loaded.settings.schedules, set())))
            return 0
        print(f"no schedules: there is no database at {loaded.database_path}", file=sys.stderr)
        return 0 if args.schedules_command == "list" else 1
    allowed = ChannelAllowlists()
    if args.schedules_command == "list":  # which chats the channels still allow
        plugins = discover()
        allowed = allowlists(plugins, validate_channels(loaded.settings, loaded.label, plugins))
    result: int = anyio.run(_run, args, loaded, allowed, loaded.settings.schedules)
    return result


def not_synced(configured: Sequence[ScheduleSettings], stored: set[str]) -> list[str]:
    """``[[schedules]]`` jobs the database does not hold yet: the daemon adds them when
    it next starts."""
    from thalos_bot.schedules.words import preview

    return [
        f"{job.id}: {f'cron {job.cron!r} ({job.timezone})' if job.cron else f'once at {job.at}'}"
        f" — {preview(job.task)} [to {job.deliver_to}, from bot.toml, added at next start]"
        for job in configured
        if job.id not in stored
    ]


async def _run(
    args: argparse.Namespace,
    loaded: LoadedConfig,
    allowed: DeliveryAllowlist,
    configured: Sequence[ScheduleSettings] = (),
) -> int:
    from thalos_bot.cli import state
    from thalos_bot.domain.clock import utc_now
    from thalos_bot.schedules.words import describe
    from thalos_bot.storage.database import DatabaseError

    try:
        async with state.opened(loaded) as stores:
            assert stores is not None  # run() answered for a state not made yet
            store = stores.schedules
            if args.schedules_command == "cancel":
                if not await store.cancel(args.id):
                    print(f"error: there is no pending schedule {args.id!r}", file=sys.stderr)
                    return 1
                print(f"cancelled {args.id}")
                return 0
            pending = [
                schedule
                for schedule in await store.listing()
                if schedule.state in {"active", "paused"}
                and (args.owner is None or schedule.owner == args.owner)
            ]
            now = utc_now()
            for schedule in pending:
                origin = "bot.toml" if schedule.origin == "config" else "tool"
                refused = allowed.refusal(schedule.deliver_to)
                status = "" if refused is None else f" skipped: chat no longer allowed ({refused})"
                if schedule.state == "paused":
                    status += " paused: it runs again once resumed on the dashboard"
                print(
                    f"{describe(schedule, now)} [owner {schedule.owner}, agent "
                    f"{schedule.agent_id}, to {schedule.deliver_to}, from {origin}]{status}"
                )
            stored = {job.id for job in configured if await store.get(job.id) is not None}
            waiting = not_synced(configured, stored) if args.owner is None else []
            if waiting:
                print("\n".join(waiting))
            if not pending and not waiting:
                print("no pending schedules")
            return 0
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
