"""The audit section's filters: the page's query parameters read into an
:class:`~thalos_bot.storage.audit.AuditQuery`, each bad value named in a notice (and
left out of the search) rather than failing the page."""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import get_args

from thalos_bot.storage.audit import AuditQuery
from thalos_bot.tools.gate import Decision

DECISIONS: tuple[Decision, ...] = get_args(Decision)
SHOWN = 200
MAX_TEXT = 200


@dataclass(frozen=True, slots=True)
class AuditFilters:
    query: AuditQuery
    values: Mapping[str, str]
    """What the form shows again: the parameters as given (trimmed)."""
    problems: tuple[str, ...] = field(default=())


def _day(raw: str, name: str, problems: list[str]) -> date | None:
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        problems.append(f"“{name}” must be a date like 2026-12-01; it was left out.")
        return None


def read_filters(params: Mapping[str, str], timezone: str) -> AuditFilters:
    """``agent``, ``tool``, ``decision``, ``from`` and ``to`` (days in ``timezone``,
    ``to`` inclusive). Empty means "any"."""
    values = {
        key: params.get(key, "").strip()[:MAX_TEXT]
        for key in ("agent", "tool", "decision", "from", "to")
    }
    problems: list[str] = []
    decision: Decision | None = None
    if values["decision"]:
        matched = [d for d in DECISIONS if d == values["decision"]]
        if matched:
            decision = matched[0]
        else:
            problems.append(f"“decision” must be one of {', '.join(DECISIONS)}; it was left out.")
    zone = zoneinfo.ZoneInfo(timezone)
    first = _day(values["from"], "from", problems)
    last = _day(values["to"], "to", problems)
    if first is not None and last is not None and last < first:
        problems.append("“to” is before “from”: nothing can match.")
    since = None if first is None else datetime.combine(first, time(), zone)
    until = None if last is None else datetime.combine(last + timedelta(days=1), time(), zone)
    query = AuditQuery(
        agent=values["agent"] or None,
        tool=values["tool"] or None,
        decision=decision,
        since=since,
        until=until,
        limit=SHOWN,
    )
    return AuditFilters(query, values, tuple(problems))
