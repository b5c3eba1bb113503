"""The audit section: the filter form and the decisions found."""

from __future__ import annotations

from starlette.requests import Request

from thalos_bot.dashboard.audit import DECISIONS, SHOWN, AuditFilters, read_filters
from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.layout import page, table, unavailable, when
from thalos_bot.dashboard.markup import Markup, tag


def _filter_form(filters: AuditFilters, base: str) -> Markup:
    def field(name: str, label: str, kind: str = "text") -> Markup:
        return tag(
            "label",
            label,
            tag("input", type=kind, name=name, value=filters.values.get(name, "")),
        )

    chosen = filters.values.get("decision", "")
    return tag(
        "form",
        field("agent", "Agent"),
        field("tool", "Tool"),
        tag(
            "label",
            "Decision",
            tag(
                "select",
                tag("option", "any", value=""),
                (tag("option", d, value=d, selected=d == chosen) for d in DECISIONS),
                name="decision",
            ),
        ),
        field("from", "From", "date"),
        field("to", "To", "date"),
        tag("button", "Filter", type="submit"),
        tag("a", "Clear", href=f"{base}/audit"),
        method="get",
        action=f"{base}/audit",
        class_="filters",
    )


OWNERS_ONLY = "The audit shows every person's tool decisions: only the bot's owners see it."


async def audit_page(deps: DashboardDeps, request: Request, base: str) -> str:
    if deps.audit is None:
        return page("Audit", base, "audit", unavailable("The approvals audit"))
    if deps.scope(request) is not None:
        return page("Audit", base, "audit", tag("p", OWNERS_ONLY, class_="muted"))
    now = deps.clock()
    filters = read_filters(request.query_params, deps.timezone)
    found = await deps.audit.search(filters.query)
    rows = (
        (
            when(item.entry.at, now),
            item.agent or tag("span", "unknown", class_="muted"),
            tag("code", item.entry.tool),
            tag("span", item.entry.decision, class_=f"decision {item.entry.decision}"),
            item.entry.decided_by,
            tag("code", item.entry.session_id),
            item.entry.conversation or tag("span", "nobody asked", class_="muted"),
        )
        for item in found
    )
    shown = f"The newest {len(found)} decisions." if len(found) == SHOWN else None
    return page(
        "Audit",
        base,
        "audit",
        tag("p", "Every decision of the permission gate, newest first.", class_="muted"),
        _filter_form(filters, base),
        (tag("p", problem, class_="notice refused", role="alert") for problem in filters.problems),
        table(
            ("When", "Agent", "Tool", "Decision", "Decided by", "Session", "Asked in"),
            rows,
            empty="No decision matches." if any(filters.values.values()) else "No decision yet.",
        ),
        None if shown is None else tag("p", shown, class_="muted"),
    )
