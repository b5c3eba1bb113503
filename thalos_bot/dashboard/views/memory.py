"""The memory section: count, mode, pending reindex."""

from __future__ import annotations

from starlette.requests import Request

from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.layout import count, page, unavailable, when
from thalos_bot.dashboard.markup import tag
from thalos_bot.dashboard.memory import memory_summary


async def memory_page(deps: DashboardDeps, request: Request, base: str) -> str:
    if deps.memory is None:
        return page("Memory", base, "memory", unavailable("Memory"))
    now = deps.clock()
    summary = await memory_summary(deps.memory)
    facts: list[tuple[str, object]] = [
        ("Memories", count(summary.count)),
        ("Archived", count(summary.archived)),
        ("Recall by meaning", summary.mode if summary.mode != "off" else "off (words only)"),
        (
            "Waiting for a reindex",
            "unknown" if summary.pending is None else count(summary.pending),
        ),
    ]
    reindex = summary.reindex
    if reindex is not None:
        detail = f", {reindex.detail}" if reindex.detail else ""
        facts.append(
            (
                "Last reindex",
                [
                    (
                        f"{reindex.state}, {count(reindex.done)} of {count(reindex.total)}"
                        f"{detail}, last moved "
                    ),
                    when(reindex.updated_at, now),
                ],
            )
        )
    return page(
        "Memory",
        base,
        "memory",
        tag("dl", ((tag("dt", name), tag("dd", value)) for name, value in facts), class_="facts"),
    )
