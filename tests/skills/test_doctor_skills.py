"""``thalos-bot doctor``'s skills line: every problem, links out of the root, and the
operator's ``allow_unknown_keys``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.skills.conftest import skill_text, write_skill
from thalos_bot.service.doctor import run_doctor

pytestmark = pytest.mark.anyio


def config(tmp_path: Path, skills: str = "") -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(
        f'state_dir = "state"\n[provider]\nkind = "scripted"\n[skills]\n{skills}',
        encoding="utf-8",
    )
    return path


async def skills_check(path: Path) -> tuple[str, str]:
    (check,) = [c for c in await run_doctor(path, offline=True) if c.name == "skills load"]
    return check.outcome, check.detail


async def test_unknown_keys_pass_when_the_operator_allows_them(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "extra", skill_text("extra", extra="model: opus\n"))
    assert (await skills_check(config(tmp_path, "allow_unknown_keys = true\n")))[0] == "ok"
    outcome, detail = await skills_check(config(tmp_path))
    assert outcome == "fail"
    assert detail.endswith("extra/SKILL.md: model: unknown key")


async def test_every_problem_and_links_out_of_the_root_fail(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "bad", "---\nname: Bad\ndescription: ''\n---\n")
    write_skill(tmp_path / "outside", "leak", form="file")
    (tmp_path / "skills" / "leak.md").symlink_to(tmp_path / "outside" / "leak.md")
    outcome, detail = await skills_check(config(tmp_path))
    assert outcome == "fail"
    parts = detail.split("; ")
    assert [p.split(": ", 1)[1] for p in parts[:3]] == [
        "name: 'Bad' must be lower-case",
        "name: 'Bad' disagrees with its folder name 'bad'",
        "description: must not be empty",
    ]
    assert "leak.md: resolves outside its skills root" in parts[3]
