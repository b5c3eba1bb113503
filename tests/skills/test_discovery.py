"""Scanning roots one level deep: what counts as a skill file, errors, duplicates."""

from __future__ import annotations

from pathlib import Path

from tests.skills.conftest import skill_text, write_skill
from thalos_bot.skills.discovery import scan_roots
from thalos_bot.skills.grammar import GrammarOptions


def test_both_forms_are_found_in_name_order(tmp_path: Path) -> None:
    write_skill(tmp_path, "zeta", form="file")
    write_skill(tmp_path, "alpha")
    scan = scan_roots([tmp_path])
    assert [(s.name, s.path.relative_to(tmp_path).as_posix()) for s in scan.skills] == [
        ("alpha", "alpha/SKILL.md"),
        ("zeta", "zeta.md"),
    ]
    assert scan.errors == ()
    assert scan.complete


def test_only_one_level_deep_and_other_files_are_ignored(tmp_path: Path) -> None:
    write_skill(tmp_path / "group", "nested")  # <root>/group/nested/SKILL.md: too deep
    (tmp_path / "notes.txt").write_text("not a skill")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "logo.svg").write_text("<svg/>")
    write_skill(tmp_path / ".drafts", "hidden")
    (tmp_path / ".hidden.md").write_text("whatever")
    scan = scan_roots([tmp_path])
    assert scan.skills == ()
    assert scan.errors == ()


def test_a_skill_md_directly_in_a_root_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text(skill_text("orphan"))
    write_skill(tmp_path, "fine")
    scan = scan_roots([tmp_path])
    assert [s.name for s in scan.skills] == ["fine"]
    assert [str(e) for e in scan.errors] == [
        (
            f"{tmp_path / 'SKILL.md'}: SKILL.md directly in a skills root has no name; "
            "move it to <root>/<name>/SKILL.md"
        )
    ]


def test_a_wrongly_cased_skill_file_in_a_folder_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "release").mkdir()
    (tmp_path / "release" / "Skill.md").write_text(skill_text("release"))
    scan = scan_roots([tmp_path])
    assert scan.skills == ()
    assert "must be named exactly 'SKILL.md'" in str(scan.errors[0])
    assert scan.broken_names == {"release"}


def test_a_lower_case_skill_md_loads_as_the_reference_validator_has_it(tmp_path: Path) -> None:
    (tmp_path / "release").mkdir()
    (tmp_path / "release" / "skill.md").write_text(skill_text("release"))
    (tmp_path / "both").mkdir()
    (tmp_path / "both" / "skill.md").write_text(skill_text("both", description="lower"))
    (tmp_path / "both" / "SKILL.md").write_text(skill_text("both", description="upper"))
    scan = scan_roots([tmp_path])
    assert [(s.name, s.path.name, s.description) for s in scan.skills] == [
        ("both", "SKILL.md", "upper"),
        ("release", "skill.md", "Does a thing."),
    ]
    assert scan.skills[1].folder == (tmp_path / "release").resolve()


def test_one_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    write_skill(tmp_path, "good")
    write_skill(tmp_path, "bad", "no frontmatter at all\n")
    write_skill(tmp_path, "also-good", form="file")
    scan = scan_roots([tmp_path])
    assert [s.name for s in scan.skills] == ["also-good", "good"]
    assert len(scan.errors) == 1
    assert scan.errors[0].path.parent.name == "bad"
    assert scan.broken_names == {"bad"}


def test_unreadable_roots_are_reported_and_the_rest_scanned(tmp_path: Path) -> None:
    write_skill(tmp_path / "ok", "alpha")
    (tmp_path / "a-file").write_text("x")
    scan = scan_roots([tmp_path / "missing", tmp_path / "a-file", tmp_path / "ok"])
    assert [s.name for s in scan.skills] == ["alpha"]
    assert [(p.root.name, p.reason) for p in scan.unreadable_roots] == [
        ("missing", "does not exist"),
        ("a-file", "is not a folder"),
    ]
    assert not scan.complete


def test_first_root_wins_a_duplicate_even_when_broken(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write_skill(first, "shared", description="from the first root")
    write_skill(second, "shared", form="file", description="from the second root")
    write_skill(first, "broken", "---\nname: broken\n")  # unterminated
    write_skill(second, "broken")
    scan = scan_roots([first, second])
    assert [(s.name, s.description) for s in scan.skills] == [("shared", "from the first root")]
    assert [
        (d.name, d.kept.relative_to(first).as_posix(), d.ignored.relative_to(second).as_posix())
        for d in scan.duplicates
    ] == [
        ("broken", "broken/SKILL.md", "broken/SKILL.md"),
        ("shared", "shared/SKILL.md", "shared.md"),
    ]
    assert scan.broken_names == {"broken"}


def test_a_folder_and_a_file_of_one_name_in_one_root(tmp_path: Path) -> None:
    write_skill(tmp_path, "twin", description="folder")
    write_skill(tmp_path, "twin", form="file", description="file")
    scan = scan_roots([tmp_path])
    assert [s.description for s in scan.skills] == ["folder"]
    assert scan.duplicates[0].ignored == tmp_path / "twin.md"


def test_unknown_keys_follow_the_option(tmp_path: Path) -> None:
    write_skill(tmp_path, "extra", skill_text("extra", extra="model: haiku\n"))
    assert scan_roots([tmp_path]).skills == ()
    assert [
        s.name for s in scan_roots([tmp_path], GrammarOptions(allow_unknown_keys=True)).skills
    ] == ["extra"]
