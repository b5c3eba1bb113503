"""A whole turn in which the model loads a skill: the real runtime, the real Anthropic SDK
over a socket to the local fake, SQLite, the skills catalogue and the skills tool source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_api import AnthropicFake, text_reply, tool_use_reply
from tests.skills.conftest import ALICE, agent, open_db, write_skill
from thalos_bot.config.skills import SkillsSettings
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.domain.events import ToolCallFinished
from thalos_bot.providers.anthropic import AnthropicProvider
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.skills.catalogue import SkillsCatalogue
from thalos_bot.skills.source import SkillsToolSource
from thalos_bot.skills.store import SkillStore
from thalos_bot.skills.sync import sync_skills
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.tools.catalog import SourceCatalog

pytestmark = pytest.mark.anyio

BODY = "# Cutting a release\n\n1. Update the CHANGELOG.\n2. Tag `vX.Y.Z` and push the tag.\n"


def tool_results(request_body: Any) -> list[dict[str, Any]]:
    return [
        block
        for message in request_body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


async def test_the_model_loads_a_skill_in_a_turn(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "release", description="How we cut a release.", body=BODY)
    (skills / "release" / "references").mkdir()
    (skills / "release" / "references" / "checklist.md").write_text("- [ ] CHANGELOG\n")
    write_skill(skills, "payroll", form="file", description="Run payroll.", body="Secret.\n")
    db = await open_db(tmp_path / "state" / "thalos.db")
    settings = SkillsSettings()
    report = await sync_skills(db, settings, tmp_path)
    assert report.added == ("payroll", "release")

    store = SkillStore(db)
    releaser = agent("release*", agent_id="releaser")
    with AnthropicFake() as fake:
        fake.enqueue(
            tool_use_reply("skills__load", {"name": "release"}, text_before="Let me check."),
            tool_use_reply(
                "skills__read",
                {"name": "release", "path": "references/checklist.md"},
                id="toolu_fake_2",
            ),
            text_reply("Update the CHANGELOG, then tag and push."),
        )
        provider = AnthropicProvider(api_key="sk-ant-test", base_url=fake.base_url)
        runtime = Runtime(
            catalog=AgentCatalog([releaser]),
            store=SqliteSessionStore(db),
            provider=provider,
            settings=RuntimeSettings(model="claude-test"),
            tools=SourceCatalog([SkillsToolSource.from_settings(store, settings)]),
            contributors=[SkillsCatalogue.from_settings(store, settings)],
        )
        try:
            async with runtime:
                session = await runtime.create_session("releaser", ALICE)
                result = await runtime.run_turn(
                    TurnRequest(session.id, ALICE, "How do I cut a release?")
                )
        finally:
            await provider.aclose()
            await db.aclose()
        first, second, third = fake.requests

    assert result.ok, result.terminal
    assert result.text.endswith("Update the CHANGELOG, then tag and push.")
    finished = [e for e in result.events if isinstance(e, ToolCallFinished)]
    assert [(e.name, e.outcome) for e in finished] == [
        ("skills__load", "ok"),
        ("skills__read", "ok"),
    ]

    # The first request carries the catalogue block (only this agent's skills) and the tools.
    system = "\n".join(part["text"] for part in first.body["system"])
    assert "<skills>\n" in system
    assert "\n</skills>" in system
    assert "- release: How we cut a release." in system
    assert "payroll" not in system
    assert [t["name"] for t in first.body["tools"]] == [
        "skills__load",
        "skills__read",
        "skills__search",
    ]

    # The second request carries the loaded body, wrapped, as the tool result.
    (loaded,) = tool_results(second.body)
    assert loaded["tool_use_id"] == "toolu_fake_1"
    assert not loaded.get("is_error")
    assert loaded["content"] == (
        f'<skill name="release">\n{BODY}<skill_resources>\n'
        f"Skill folder: {(skills / 'release').resolve()}\n"
        "Paths in this skill are relative to that folder. Read a file with "
        'skills__read(name="release", path="…"); scripts are never run.\n'
        "references/checklist.md\n"
        "</skill_resources>\n</skill>"
    )

    # The third carries the file the model read, wrapped.
    _, read = tool_results(third.body)
    assert read["tool_use_id"] == "toolu_fake_2"
    assert read["content"] == (
        '<skill_file skill="release" path="references/checklist.md">\n'
        "- [ ] CHANGELOG\n</skill_file>"
    )
