"""``thalos-bot spend [--from DAY] [--to DAY] [--by person|agent|model] [--json]``: what
each person (or agent, or model) spent over a range of days (tokens, estimated dollars,
turns), a person against their daily limits."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from thalos_bot.config.loader import LoadedConfig
    from thalos_bot.storage.usage import DayUsage


def register(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    add_config: Callable[[argparse.ArgumentParser], None],
) -> None:
    spend = commands.add_parser("spend", help="what each person spent, over a range of days")
    spend.add_argument("--from", dest="first", metavar="DAY", help="first day (default: today)")
    spend.add_argument("--to", dest="last", metavar="DAY", help="last day (default: today)")
    spend.add_argument(
        "--by",
        choices=("person", "agent", "model", "schedule"),
        default="person",
        help="one line per person (default), per agent, per model or per schedule",
    )
    spend.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    add_config(spend)
    spend.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from thalos_bot.cli.said import said

    return said(args, _report)


async def _report(loaded: LoadedConfig, args: argparse.Namespace) -> tuple[str, bool]:
    from datetime import date, datetime, time, timedelta
    from zoneinfo import ZoneInfo

    from thalos_bot.cli import state
    from thalos_bot.domain.events import TokenUsage
    from thalos_bot.service.spending import spending_limits
    from thalos_bot.storage.pg.usage import PgUsageLedger
    from thalos_bot.storage.usage import DayUsage, SqliteUsageLedger

    async with state.opened(loaded) as stores:
        if stores is None:
            return f"{state.where(loaded)} does not exist yet: nothing was spent", False
        limits = spending_limits(loaded.settings, stores.usage)
        today = limits.today()
        first, last = args.first or today, args.last or today
        for name, day in (("--from", first), ("--to", last)):
            try:
                date.fromisoformat(day)
            except ValueError:
                return f"{name}: {day!r} is not a day like 2026-12-01", False
        if first > last:
            return f"--from {first} is after --to {last}", False
        ledger = stores.usage
        assert isinstance(ledger, SqliteUsageLedger | PgUsageLedger)
        if args.by == "schedule":
            zone = ZoneInfo(limits.timezone)
            since = datetime.combine(date.fromisoformat(first), time(), zone)
            until = datetime.combine(date.fromisoformat(last) + timedelta(days=1), time(), zone)
            runs = await stores.run_costs.by_schedule(since, until)
            spent_by = {
                name: DayUsage(TokenUsage(tokens), dollars, count)
                for name, (tokens, dollars, count) in runs.items()
            }
            return _broken_down(args, first, last, spent_by), True
        if args.by != "person":
            return _broken_down(args, first, last, await ledger.by(args.by, first, last)), True
        spent = await ledger.people(first, last)
    people = {
        principal: {
            "tokens": used.usage.total,
            "cost_usd": round(used.cost_usd, 6),
            "turns": used.turns,
            "daily_tokens": limits.daily(principal)[0],
            "daily_cost_usd": limits.daily(principal)[1],
        }
        for principal, used in spent.items()
    }
    if args.json:
        return json.dumps({"from": first, "to": last, "people": people}, indent=2), True
    lines = [f"Spent from {first} to {last} ({limits.timezone}):"]
    if not people:
        lines.append("  nothing")
    for principal, row in people.items():
        limit = row["daily_tokens"]
        each = "" if limit is None else f" (daily limit {limit:,} tokens)"
        lines.append(
            f"  {principal}: {row['tokens']:,} tokens, about ${row['cost_usd']:,.2f}, "
            f"{row['turns']:,} turns{each}"
        )
    return "\n".join(lines), True


def _broken_down(
    args: argparse.Namespace, first: str, last: str, spent: dict[str, DayUsage]
) -> str:
    """The report per agent, model or schedule (turns recorded since each was kept; a
    schedule's "turns" are its runs)."""
    rows = {
        name: {"tokens": used.usage.total, "cost_usd": round(used.cost_usd, 6), "turns": used.turns}
        for name, used in spent.items()
    }
    if args.json:
        return json.dumps({"from": first, "to": last, f"{args.by}s": rows}, indent=2)
    lines = [f"Spent from {first} to {last}, by {args.by}:"]
    if not rows:
        lines.append("  nothing")
    for name, row in rows.items():
        lines.append(
            f"  {name}: {row['tokens']:,} tokens, about ${row['cost_usd']:,.2f}, "
            f"{row['turns']:,} {'runs' if args.by == 'schedule' else 'turns'}"
        )
    return "\n".join(lines)
