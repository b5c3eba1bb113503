"""The tools-and-skills section: tool sources with their state, and the skills."""

from __future__ import annotations

from starlette.requests import Request

from thalos_bot.dashboard.catalogue import skill_rows, source_rows
from thalos_bot.dashboard.deps import DashboardDeps
from thalos_bot.dashboard.layout import count, page, table, unavailable, when
from thalos_bot.dashboard.markup import tag

_SOURCE_STATES = {"ready": "up", "disabled": "muted", "starting": "muted"}


async def tools_page(deps: DashboardDeps, request: Request, base: str) -> str:
    now = deps.clock()
    sources = source_rows(deps.tool_sources())
    body: list[object] = [
        tag("h2", "Tool sources"),
        table(
            ("Source", "Kind", "State", "Tools"),
            (
                (
                    tag("code", row.name),
                    row.kind,
                    [
                        tag("span", row.state, class_=_SOURCE_STATES.get(row.state, "down")),
                        f": {row.reason}" if row.reason else "",
                    ],
                    [count(row.tool_count), " ", tag("span", ", ".join(row.tools), class_="muted")],
                )
                for row in sources
            ),
            empty="No tool source is configured.",
        ),
        tag("h2", "Skills"),
    ]
    if deps.skills is None:
        body.append(unavailable("The skills store"))
    else:
        skills = await skill_rows(deps.skills)
        body.append(
            table(
                ("Skill", "Description", "State", "Tags", "From", "Synced"),
                (
                    (
                        tag("code", row.name),
                        row.description,
                        "active" if row.active else tag("span", "inactive", class_="muted"),
                        ", ".join(row.tags),
                        tag("code", row.source),
                        when(row.updated_at, now),
                    )
                    for row in skills
                ),
                empty="No skill is stored yet.",
            )
        )
    return page("Tools and skills", base, "tools", *body)
