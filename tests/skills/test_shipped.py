"""The skills shipped in ``skills/`` are valid under our own grammar."""

from __future__ import annotations

from pathlib import Path

from thalos_bot.domain.prompt_blocks import find_markup
from thalos_bot.skills.discovery import scan_roots
from thalos_bot.skills.resources import list_files, read_file

SHIPPED = Path(__file__).resolve().parents[2] / "skills"


def test_the_shipped_skills_load_without_errors() -> None:
    scan = scan_roots([SHIPPED])
    assert scan.errors == ()
    assert scan.duplicates == ()
    assert scan.complete
    assert len(scan.skills) >= 2
    for skill in scan.skills:
        assert skill.body.strip(), skill.name
        assert skill.tags, skill.name
        assert find_markup(skill.body + skill.description) == [], skill.name


def test_the_shipped_memory_skill_names_the_real_memory_tools() -> None:
    memory = {s.name: s for s in scan_roots([SHIPPED]).skills}["memory-habits"]
    for tool in ("memory__remember", "memory__recall", "memory__forget", "memory__list"):
        assert tool in memory.body


def test_the_shipped_thread_summary_lists_and_reads_its_template() -> None:
    summary = {s.name: s for s in scan_roots([SHIPPED]).skills}["thread-summary"]
    assert summary.folder is not None
    assert "references/template.md" in summary.body
    assert list_files(summary.folder).files == ("references/template.md",)
    template = read_file(summary.folder, "references/template.md")
    assert template.kind == "text"
    assert template.text.startswith("# Summary template")
