"""A skill library in the shapes of the public Agent Skills collection (long descriptions,
hyphenated names, license files, scripts/, references/, assets/ folders), written here,
loads exactly as the reference validator judges it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import skills_ref  # type: ignore[import-untyped]
from structlog.testing import capture_logs

from tests.skills.conftest import agent, context, open_db
from thalos_bot.cli.cmd_skills import SkillsCommand, check_skills
from thalos_bot.config.skills import SkillsSettings
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.skills.discovery import scan_roots
from thalos_bot.skills.source import SkillsToolSource
from thalos_bot.skills.store import SkillStore
from thalos_bot.skills.sync import sync_skills

SENTENCE = "Use it when the user asks for this kind of work, or names the files it handles. "


def description(length: int) -> str:
    return (SENTENCE * 20)[: length - 1] + "."


def skill(
    root: Path,
    name: str,
    length: int,
    *,
    front: str = "",
    body: str = "# Steps\n\n1. Read the request.\n2. Do the work.\n",
    files: dict[str, str] | None = None,
) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    wrapped = "\n".join(f"  {line}" for line in textwrap.wrap(description(length), 76))
    text = f"---\nname: {name}\ndescription: >-\n{wrapped}\n{front}---\n{body}"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    for relative, content in (files or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(content, encoding="utf-8")


def collection(root: Path) -> None:
    skill(
        root,
        "document-builder",
        319,
        front="license: Proprietary. LICENSE.txt has complete terms\n",
        files={
            "LICENSE.txt": "Terms.\n",
            "scripts/build.py": "print('built')\n",
            "references/ooxml.md": "# OOXML notes\n",
        },
    )
    skill(root, "webapp-checks", 941, files={"scripts/with_server.py": "print('up')\n"})
    skill(
        root,
        "mcp-server-guide",
        602,
        front="license: Complete terms in LICENSE.txt\n",
        body="# Guide\n" + "A line of guidance.\n" * 300,
        files={f"references/part-{i}.md": f"# Part {i}\n" for i in range(4)},
    )
    skill(root, "brand-palette", 120, files={"assets/palette.json": '{"ink": "#111"}\n'})
    skill(
        root,
        "api-client-notes",
        1068,
        body="# Notes\n" + "x" * 90_000 + "\n",
    )
    skill(root, "canvas-design", 700, body="# Canvas\n" + "One more step.\n" * 620)
    skill(
        root,
        "gif-maker",
        410,
        front="metadata:\n  author: someone\n  version: 0.10\nallowed-tools: Bash(python:*) Read\n",
    )
    skill(root, "2d-sprites", 200, front="compatibility: Requires Python 3.11+ and Pillow\n")
    skill(
        root,
        "theme-factory",
        250,
        files={f"themes/theme-{i}.md": f"# Theme {i}\n" for i in range(10)},
    )
    skill(root, "doc-coauthoring", 500)


def test_the_collection_loads_as_the_reference_validator_judges_it(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    collection(root)
    judged = {folder.name for folder in root.iterdir() if not skills_ref.validate(folder)}
    scan = scan_roots([root])
    assert {s.name for s in scan.skills} == judged
    assert judged == {
        "document-builder",
        "webapp-checks",
        "mcp-server-guide",
        "brand-palette",
        "canvas-design",
        "gif-maker",
        "2d-sprites",
        "theme-factory",
        "doc-coauthoring",
    }
    (broken,) = scan.errors
    assert [p.describe() for p in broken.problems] == [
        "description: at most 1024 characters (it has 1068)"
    ]


def test_check_shows_the_one_real_problem_and_the_size_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    collection(tmp_path / "skills")
    command = SkillsCommand(SkillsSettings(), tmp_path, AgentCatalog([agent()]))
    assert check_skills(command) == 1
    out = capsys.readouterr().out.splitlines()
    start = out.index("problems (1):")
    assert out[start:] == [
        "problems (1):",
        "  skills/api-client-notes/SKILL.md: description: at most 1024 characters (it has 1068)",
        "warnings (1):",
        (
            "  skills/canvas-design/SKILL.md: the file has 635 lines; the Agent Skills "
            "specification recommends under 500 (move detail into references/ files)"
        ),
    ]


@pytest.mark.anyio
async def test_a_loaded_skill_lists_its_resources_and_reads_them(tmp_path: Path) -> None:
    collection(tmp_path / "skills")
    db = await open_db(tmp_path / "state" / "thalos.db")
    try:
        with capture_logs():
            await sync_skills(db, SkillsSettings(), tmp_path)
        source = SkillsToolSource(SkillStore(db))
        who = context(agent("*"))
        loaded = await source.call("load", {"name": "document-builder"}, who)
        read = await source.call(
            "read", {"name": "document-builder", "path": "references/ooxml.md"}, who
        )
    finally:
        await db.aclose()
    listed = loaded.content.split("<skill_resources>\n", 1)[1].splitlines()[2:-2]
    assert listed == ["LICENSE.txt", "references/ooxml.md", "scripts/build.py"]
    assert read.content.splitlines()[1] == "# OOXML notes"
