"""The channels section: each channel up or down, its last poll or event and last error."""

from __future__ import annotations

from starlette.requests import Request

from thalos_bot.dashboard.channels import channel_rows
from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.layout import page, table, when
from thalos_bot.dashboard.markup import tag


async def channels_page(deps: DashboardDeps, request: Request, base: str) -> str:
    now = deps.clock()
    rows = channel_rows(deps.channels())
    return page(
        "Channels",
        base,
        "",
        table(
            ("Channel", "State", "Last poll or event", "Last error"),
            (
                (
                    tag("span", row.describe, title=row.name),
                    tag("span", "up", class_="up")
                    if row.up
                    else tag("span", "down", class_="down"),
                    when(row.last_ok_at, now),
                    tag("span", "none", class_="muted")
                    if row.last_error is None
                    else [row.last_error, " ", when(row.last_error_at, now)],
                )
                for row in rows
            ),
            empty="No channels are open.",
        ),
    )
