"""Helpers for the skills tests: writing skill files, a migrated database, agents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.skills.schema import SKILLS_MIGRATIONS
from thalos_bot.skills.store import SkillStore
from thalos_bot.storage.database import Database
from thalos_bot.storage.migrations import MIGRATIONS
from thalos_bot.tools.types import ToolContext

ALICE = SecurityContext.of("alice", ["user"])


def skill_text(
    name: str,
    description: str = "Does a thing.",
    body: str = "# Steps\n\n1. Do it.\n",
    extra: str = "",
) -> str:
    """A valid skill file (plus any ``extra`` frontmatter lines)."""
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}"


def write_skill(
    root: Path,
    name: str,
    text: str | None = None,
    *,
    form: str = "folder",
    **fields: str,
) -> Path:
    """Write ``<root>/<name>/SKILL.md`` (``form="folder"``) or ``<root>/<name>.md``."""
    path = root / name / "SKILL.md" if form == "folder" else root / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else skill_text(name, **fields), encoding="utf-8")
    return path


def agent(
    *skills: str, agent_id: str = "helper", tools: tuple[str, ...] = ("*",)
) -> AgentDefinition:
    return AgentDefinition(
        AgentId(agent_id), agent_id.title(), "", "You help.", tools=tools, skills=skills
    )


def context(who: AgentDefinition) -> ToolContext:
    return ToolContext(ALICE, who, SessionId("s_test"))


async def open_db(path: Path) -> Database:
    return await Database.open(path, migrations=[*MIGRATIONS, *SKILLS_MIGRATIONS])


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await open_db(tmp_path / "state" / "thalos.db")
    try:
        yield database
    finally:
        await database.aclose()


@pytest.fixture
def store(db: Database) -> SkillStore:
    return SkillStore(db)


async def accept(db: Database, root: Path, name: str) -> None:
    """Accept the skill ``name`` under ``root`` as its files are now (a review)."""
    from datetime import UTC, datetime

    from thalos_bot.skills.discovery import scan_roots
    from thalos_bot.skills.pinning import inspect
    from thalos_bot.skills.pins import Pin, PinStore

    (doc,) = [d for d in scan_roots([root]).skills if d.name == name]
    await PinStore(db).accept(Pin.of(name, inspect(doc).manifest, datetime.now(UTC), "operator"))
