"""The channels section: each channel up or down, its last poll or event and last error;
on replicas, the owner of each platform connection."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from starlette.requests import Request

from thalos_bot.dashboard.channels import ConnectionRow, channel_rows
from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.layout import page, table, when
from thalos_bot.dashboard.markup import tag


async def channels_page(deps: DashboardDeps, request: Request, base: str) -> str:
    now = deps.clock()
    rows = channel_rows(deps.channels())
    owners = [] if deps.connections is None else await deps.connections()
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
        *_owners(owners, now, shown=deps.connections is not None),
    )


def _owners(rows: Sequence[ConnectionRow], now: datetime, *, shown: bool) -> list[object]:
    if not shown:
        return []
    return [
        tag("h2", "Connections among replicas"),
        table(
            ("Connection", "Owner", "Since", "Last taken over"),
            (
                (
                    row.channel,
                    tag("span", "nobody (lease ran out)", class_="down")
                    if row.holder is None
                    else row.holder,
                    when(row.since, now),
                    tag("span", "never", class_="muted")
                    if row.taken_over_at is None
                    else when(row.taken_over_at, now),
                )
                for row in rows
            ),
            empty="No platform connection has been opened by a replica yet.",
        ),
    ]
