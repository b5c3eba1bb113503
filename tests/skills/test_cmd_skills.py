"""``thalos-bot skills list|check``: every skill, its source, its state, its errors."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from tests.skills.conftest import agent, open_db, write_skill
from thalos_bot.cli import cmd_skills
from thalos_bot.cli.cmd_skills import SkillsCommand, check_skills, list_skills
from thalos_bot.config.loader import LoadedConfig
from thalos_bot.config.models import Settings
from thalos_bot.config.skills import SkillsSettings
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.skills.sync import sync_skills

AGENTS = AgentCatalog([agent(agent_id="assistant"), agent("release*", agent_id="releaser")])


def command(tmp_path: Path, *roots: str) -> SkillsCommand:
    settings = SkillsSettings.model_validate({"roots": list(roots) or ["skills"]})
    return SkillsCommand(settings, tmp_path, AGENTS, tmp_path / "state" / "thalos.db")


def library(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "release", description="Cut a release.")
    write_skill(tmp_path / "skills", "release-notes", form="file", description="Write notes.")
    write_skill(tmp_path / "skills", "triage", description="Sort issues.")


def test_check_shows_every_skill_and_its_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library(tmp_path)
    assert check_skills(command(tmp_path)) == 0
    assert capsys.readouterr().out.splitlines() == [
        "skills (3):",
        "  release        skills/release/SKILL.md  Cut a release.",
        "  release-notes  skills/release-notes.md  Write notes.",
        "  triage         skills/triage/SKILL.md   Sort issues.",
    ]


def test_check_fails_on_any_load_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    library(tmp_path)
    write_skill(tmp_path / "skills", "broken", "---\nname: other\ndescription: d\n---\n")
    write_skill(tmp_path / "extra", "triage")
    assert check_skills(command(tmp_path, "skills", "extra", "missing")) == 1
    out = capsys.readouterr().out
    assert "problems (3):" in out
    assert "  missing: skills root does not exist" in out
    assert "  skills/broken/SKILL.md: name: 'other' disagrees with its folder name 'broken'" in out
    assert (
        "  extra/triage/SKILL.md: ignored: the name 'triage' is already taken by "
        "skills/triage/SKILL.md" in out
    )


def test_check_for_one_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    library(tmp_path)
    assert check_skills(command(tmp_path), "releaser") == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "agent releaser (skills release*): sees 2: release, release-notes"
    )
    assert check_skills(command(tmp_path), "assistant") == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "agent assistant: no skills globs, so no skills catalogue and no skill tools"
    )
    assert check_skills(command(tmp_path), "nobody") == 2
    assert "there is no agent called 'nobody'" in capsys.readouterr().err


def test_list_before_any_sync(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    library(tmp_path)
    assert list_skills(command(tmp_path)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("has no skills yet (synced at start-up)")
    assert out[1:] == [
        "skills (3):",
        "  release        not synced  skills/release/SKILL.md  added at next start",
        "  release-notes  not synced  skills/release-notes.md  added at next start",
        "  triage         not synced  skills/triage/SKILL.md   added at next start",
    ]


def test_list_shows_state_source_and_errors_after_a_sync(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library(tmp_path)
    write_skill(tmp_path / "skills", "gone", form="file")
    cmd = command(tmp_path)

    async def sync() -> None:
        db = await open_db(tmp_path / "state" / "thalos.db")
        try:
            await sync_skills(db, cmd.settings, tmp_path, now=datetime.now(UTC))
        finally:
            await db.aclose()

    with capture_logs():
        anyio.run(sync)
        (tmp_path / "skills" / "gone.md").unlink()
        anyio.run(sync)
    write_skill(tmp_path / "skills", "triage", description="Sort issues, faster.")
    write_skill(tmp_path / "skills", "release", "---\nname: release\n")  # now broken
    assert list_skills(cmd) == 0
    assert capsys.readouterr().out.splitlines() == [
        "skills (4):",
        "  gone           inactive  skills/gone.md",
        (
            "  release        active    skills/release/SKILL.md  "
            "file has errors; serving the last good version"
        ),
        "  release-notes  active    skills/release-notes.md",
        "  triage         active    skills/triage/SKILL.md   file changed; updated at next start",
        "load errors (1):",
        "  skills/release/SKILL.md: unterminated frontmatter: no closing '---' fence (line 1)",
    ]
    assert list_skills(cmd, "releaser") == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[1:3]] == ["release", "release-notes"]


def test_handlers_read_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    library(tmp_path)

    class WithSkills(Settings):
        skills: SkillsSettings = SkillsSettings()

    config = tmp_path / "bot.toml"

    def load(explicit: Path | None) -> LoadedConfig:
        assert explicit == config
        return LoadedConfig(WithSkills(), config, tmp_path / "state")

    monkeypatch.setattr(cmd_skills, "load_settings", load)
    args = argparse.Namespace(config=config, agent=None)
    assert cmd_skills.run_check(args) == 0
    assert "skills/release/SKILL.md" in capsys.readouterr().out
    assert cmd_skills.run_list(args) == 0
    assert "not synced" in capsys.readouterr().out


def test_list_reports_an_unreadable_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library(tmp_path)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "thalos.db").write_bytes(b"this is not sqlite" * 100)
    assert list_skills(command(tmp_path)) == 1
    assert "error: cannot read the database" in capsys.readouterr().err
