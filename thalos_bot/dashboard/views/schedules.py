"""The schedules section, with the owner's pause, resume and cancel forms."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request

from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.layout import count, page, table, unavailable, when
from thalos_bot.dashboard.markup import Markup, join, tag
from thalos_bot.dashboard.schedules import ScheduleRow, apply, schedule_rows

_PAST = {"pause": "Paused", "resume": "Resumed", "cancel": "Cancelled"}
_STATE_WORDS = {
    "active": "active",
    "paused": "paused",
    "done": "finished",
    "cancelled": "cancelled",
}


def _action_notice(request: Request) -> Markup | None:
    """What the last pause, resume or cancel did (from the redirect's query)."""
    outcome = request.query_params.get("outcome")
    action = request.query_params.get("action", "")
    schedule_id = request.query_params.get("id", "")
    if outcome == "done" and action in _PAST:
        return tag("p", f"{_PAST[action]} {schedule_id}.", class_="notice", role="status")
    if outcome == "refused" and action in _PAST:
        return tag(
            "p",
            f"Could not {action} {schedule_id}: it is not in a state that allows it any more "
            "(reload to see where it stands).",
            class_="notice refused",
            role="alert",
        )
    return None


def _buttons(deps: DashboardDeps, request: Request, base: str, row: ScheduleRow) -> Markup:
    token = deps.csrf_token(request)
    return join(
        tag(
            "form",
            tag("input", type="hidden", name=deps.csrf_field, value=token),
            tag(
                "button",
                action.capitalize(),
                type="submit",
                class_="danger" if action == "cancel" else None,
                aria_label=f"{action.capitalize()} {row.id}",
            ),
            method="post",
            action=f"{base}/schedules/{quote(row.id, safe='')}/{action}",
            class_="inline",
        )
        for action in row.actions
    )


async def schedules_page(deps: DashboardDeps, request: Request, base: str) -> str:
    if deps.schedules is None:
        return page("Schedules", base, "schedules", unavailable("The schedule store"))
    now = deps.clock()
    principal = deps.principal_of(request)
    owner = principal is not None and deps.is_owner(principal)
    whose = deps.scope(request)
    rows = [r for r in await schedule_rows(deps.schedules) if whose in (None, r.owner)]
    headers = ["Schedule", "Task", "Agent", "Timing", "Answers in", "State", "Next run"]
    headers += ["Last result", "Runs"]
    if owner:
        headers.append("Actions")

    def cells(row: ScheduleRow) -> list[object]:
        result: object = tag("span", "not run yet", class_="muted")
        if row.last_result is not None:
            result = [row.last_result, " ", when(row.last_finished, now)]
        cells: list[object] = [
            [tag("code", row.id), tag("br"), tag("span", f"by {row.owner}", class_="muted")],
            row.task,
            row.agent,
            row.timing,
            row.deliver_to,
            _STATE_WORDS[row.state],
            when(row.next_run, now) if row.state in {"active", "paused"} else "—",
            result,
            count(row.runs),
        ]
        if owner:
            cells.append(_buttons(deps, request, base, row))
        return cells

    return page(
        "Schedules",
        base,
        "schedules",
        _action_notice(request),
        table(headers, (cells(row) for row in rows), empty="Nothing is scheduled."),
        None if owner else tag("p", "Only the owner can pause, resume or cancel.", class_="muted"),
    )


async def schedule_action(deps: DashboardDeps, action: str, schedule_id: str) -> str:
    """Apply an owner's action (already checked: owner, CSRF); the outcome's name."""
    if deps.schedules is None or action not in _PAST:
        return "refused"
    outcome = await apply(deps.schedules, action, schedule_id, deps.clock())  # type: ignore[arg-type]
    if outcome == "done":
        deps.on_schedule_change()
    return outcome
