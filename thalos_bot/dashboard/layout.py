"""The page around every section: head (the package's stylesheet, no inline style or
script), the navigation, and the small formatting helpers the sections share."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from thalos_bot.dashboard.markup import Markup, tag
from thalos_bot.domain.clock import ago

SECTIONS: tuple[tuple[str, str], ...] = (
    ("", "Channels"),
    ("sessions", "Sessions and spend"),
    ("schedules", "Schedules"),
    ("audit", "Audit"),
    ("tools", "Tools and skills"),
    ("memory", "Memory"),
)


def page(title: str, base: str, current: str, *body: object) -> str:
    """A whole HTML document. ``base``: where the dashboard is mounted (``/dashboard``);
    ``current``: the section's path, to mark it in the navigation."""
    nav = tag(
        "nav",
        tag(
            "ul",
            (
                tag(
                    "li",
                    tag(
                        "a",
                        label,
                        href=f"{base}/{path}",
                        aria_current="page" if path == current else None,
                    ),
                )
                for path, label in SECTIONS
            ),
            tag("li", tag("a", "Chat", href=base.rsplit("/", 1)[0] + "/", class_="chat")),
        ),
        aria_label="Dashboard sections",
    )
    head = tag(
        "head",
        tag("meta", charset="utf-8"),
        tag("meta", name="viewport", content="width=device-width, initial-scale=1"),
        tag("title", f"{title} · thalos-bot"),
        tag("link", rel="stylesheet", href=f"{base}/static/dashboard.css"),
    )
    document = tag(
        "html",
        head,
        tag(
            "body",
            tag("header", tag("p", "thalos-bot", class_="brand"), nav),
            tag("main", tag("h1", title), *body),
        ),
        lang="en",
    )
    return "<!DOCTYPE html>\n" + document


def when(at: datetime | None, now: datetime) -> Markup:
    """A time as UTC, with how long ago (or how soon) it is."""
    if at is None:
        return tag("span", "never", class_="muted")
    stamp = f"{at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    relative = ago(now - at) if at <= now else f"in {ago(at - now).removesuffix(' ago')}"
    return tag(
        "time", stamp, " ", tag("span", f"({relative})", class_="muted"), datetime=at.isoformat()
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, empty: str) -> Markup:
    """A table, or one line saying there is nothing to show. Each cell carries its
    column's name (``data-label``): on a phone the stylesheet shows a row as a card."""
    body = [
        tag(
            "tr",
            (tag("td", cell, data_label=header) for header, cell in zip(headers, row, strict=True)),
        )
        for row in rows
    ]
    if not body:
        return tag("p", empty, class_="empty")
    return tag(
        "div",
        tag(
            "table",
            tag("thead", tag("tr", (tag("th", h, scope="col") for h in headers))),
            tag("tbody", body),
        ),
        class_="scroll",
    )


def unavailable(what: str) -> Markup:
    return tag("p", f"{what} is not available in this daemon.", class_="empty")


def money(cost: float | None) -> str:
    if cost is None:
        return "unknown"
    if cost == 0:
        return "$0.00"
    return f"${cost:,.2f}" if cost >= 0.01 else "under $0.01"


def count(number: int) -> str:
    return f"{number:,}"
