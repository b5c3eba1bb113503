"""The skill file grammar: what loads, what is refused and with which words."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from tests.skills.conftest import skill_text, write_skill
from thalos_bot.skills.document import MAX_FILE_BYTES, SkillDocument, SkillLoadError
from thalos_bot.skills.grammar import GrammarOptions, SkillCandidate, parse_skill, read_skill

HERE = Path("/skills/release")
FOLDER = SkillCandidate(HERE / "SKILL.md", "release", "folder")


def parse(text: str | bytes, candidate: SkillCandidate = FOLDER, **options: Any) -> SkillDocument:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return parse_skill(raw, candidate, GrammarOptions(**options))


def refusal(text: str | bytes, candidate: SkillCandidate = FOLDER, **options: Any) -> str:
    with pytest.raises(SkillLoadError) as caught:
        parse(text, candidate, **options)
    assert caught.value.path == candidate.path
    return str(caught.value)


# --- what loads --------------------------------------------------------------------


def test_a_full_agent_skills_file_loads() -> None:
    text = (
        "---\n"
        "name: release\n"
        "description: How we cut a release.\n"
        "license: Apache-2.0\n"
        "compatibility: needs git and network access\n"
        "metadata:\n"
        "  author: ops\n"
        "  version: 2\n"
        "  reviewed: 2025-01-31\n"
        "  draft: false\n"
        "allowed-tools: Bash(git:*) Read\n"
        "tags: [Release, git, RELEASE, ' ops ']\n"
        "---\n"
        "# Cutting a release\n\nTag it.\n"
    )
    doc = parse(text)
    assert doc.name == "release"
    assert doc.description == "How we cut a release."
    assert doc.license == "Apache-2.0"
    assert doc.compatibility == "needs git and network access"
    assert dict(doc.metadata) == {
        "author": "ops",
        "version": "2",
        "reviewed": "2025-01-31",
        "draft": "false",
    }
    assert doc.allowed_tools == ("Bash(git:*)", "Read")
    assert doc.tags == ("release", "git", "ops")  # lower-cased, de-duplicated, in order
    assert doc.body == "# Cutting a release\n\nTag it.\n"
    assert doc.sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert doc.path == FOLDER.path


def test_allowed_tools_may_be_a_list() -> None:
    doc = parse(skill_text("release", extra="allowed-tools:\n  - Read\n  - Bash(git:*)\n"))
    assert doc.allowed_tools == ("Read", "Bash(git:*)")


def test_the_body_is_verbatim_with_line_endings_made_lf() -> None:
    text = "---\r\nname: release\r\ndescription: d\r\n---\r\n\r\n  Line one\r\nTwo\rThree\t \n"
    assert parse(text).body == "\n  Line one\nTwo\nThree\t \n"


def test_a_utf8_byte_order_mark_is_ignored() -> None:
    assert parse(b"\xef\xbb\xbf" + skill_text("release").encode()).name == "release"


def test_the_name_matches_its_folder_or_file_exactly() -> None:
    assert "disagrees with its folder name 'Release'" in refusal(
        skill_text("release"), SkillCandidate(HERE, "Release", "folder")
    )
    as_file = SkillCandidate(Path("/skills/RELEASE.md"), "RELEASE", "file")
    assert "disagrees with its file name 'RELEASE.md'" in refusal(skill_text("release"), as_file)
    as_file = SkillCandidate(Path("/skills/release.md"), "release", "file")
    assert parse(skill_text("release"), as_file).name == "release"


def test_scalars_stay_text_as_written() -> None:
    doc = parse(
        skill_text(
            "release",
            extra="license:\nmetadata:\n  version: 1.10\n  draft: no\n  empty: ~\n",
        )
    )
    assert dict(doc.metadata) == {"version": "1.10", "draft": "no", "empty": "~"}
    assert doc.license is None


def test_a_description_up_to_1024_characters_loads() -> None:
    assert len(parse(skill_text("release", "x" * 1024)).description) == 1024
    assert "description: at most 1024 characters (it has 1025)" in refusal(
        skill_text("release", "x" * 1025)
    )


def test_a_long_license_loads() -> None:
    assert parse(skill_text("release", extra=f"license: {'L' * 2000}\n")).license == "L" * 2000


def test_compatibility_stays_at_most_500_characters() -> None:
    assert parse(skill_text("release", extra=f"compatibility: {'c' * 500}\n")).compatibility
    assert "compatibility: at most 500 characters (it has 501)" in refusal(
        skill_text("release", extra=f"compatibility: {'c' * 501}\n")
    )


def test_allowed_tools_text_splits_outside_parentheses() -> None:
    doc = parse(skill_text("release", extra="allowed-tools: Bash(git add:*) Read, Grep\n"))
    assert doc.allowed_tools == ("Bash(git add:*)", "Read", "Grep")


def test_every_problem_of_a_file_is_reported() -> None:
    text = (
        "---\n"
        "name: Bad--Name_\n"
        f"description: {'d' * 1068}\n"
        f"compatibility: {'c' * 600}\n"
        "metadata:\n  nested:\n    deep: x\n"
        "tags: [ok, [no]]\n"
        "model: opus\n"
        "---\n" + "body\n" * 700
    )
    with pytest.raises(SkillLoadError) as caught:
        parse(text)
    assert [p.describe() for p in caught.value.problems] == [
        "model: unknown key",
        "name: 'Bad--Name_' must be lower-case",
        "name: 'Bad--Name_' must not contain '--'",
        "name: 'Bad--Name_' may hold only letters, digits and '-' (not '_')",
        "name: 'Bad--Name_' disagrees with its folder name 'release'",
        "description: at most 1024 characters (it has 1068)",
        "compatibility: at most 500 characters (it has 600)",
        "metadata.nested: must be text, not a map",
        "tags[1]: must be text, not a list",
    ]
    assert str(caught.value).splitlines()[0] == "/skills/release/SKILL.md: model: unknown key"


def test_the_spec_size_recommendations_are_warnings() -> None:
    short = parse(skill_text("release"))
    assert short.warnings == ()
    long = parse(skill_text("release", body="step\n" * 600 + "x" * 20_000))
    assert long.warnings == (
        (
            "the file has 605 lines; the Agent Skills specification recommends under 500 "
            "(move detail into references/ files)"
        ),
        (
            "the body is about 5,750 tokens; the Agent Skills specification recommends under "
            "5,000 (move detail into references/ files)"
        ),
    )


def test_closing_fence_may_end_the_file() -> None:
    assert parse("---\nname: release\ndescription: d\n---").body == ""


def test_unknown_keys_load_when_the_operator_allows_them() -> None:
    text = skill_text("release", extra="model: opus\nuser-invocable: true\n")
    assert parse(text, allow_unknown_keys=True).name == "release"


# --- what is refused ----------------------------------------------------------------


def test_unknown_key_names_the_file_and_key() -> None:
    message = refusal(skill_text("release", extra="tag: [x]\n"))
    assert message == "/skills/release/SKILL.md: tag: unknown key (did you mean 'tags'?)"


def test_duplicate_keys_are_refused_not_silently_resolved() -> None:
    text = "---\nname: release\ndescription: one\ndescription: two\n---\nbody\n"
    assert refusal(text) == "/skills/release/SKILL.md: duplicate key 'description' (line 4)"


def test_duplicate_keys_inside_metadata_are_refused() -> None:
    text = skill_text("release", extra="metadata:\n  a: 1\n  a: 2\n")
    assert "duplicate key 'a'" in refusal(text)


def test_a_missing_fence_is_refused() -> None:
    message = refusal("name: release\ndescription: d\n\n# Body\n")
    assert message.startswith("/skills/release/SKILL.md: missing '---' fence")


def test_a_file_not_starting_with_the_fence_is_refused() -> None:
    assert "missing '---' fence" in refusal("\n" + skill_text("release"))


def test_an_unterminated_fence_is_refused() -> None:
    message = refusal("---\nname: release\ndescription: d\n# Body, but no closing fence\n")
    assert "unterminated frontmatter: no closing '---' fence" in message


def test_a_name_disagreeing_with_its_folder_is_refused() -> None:
    message = refusal(skill_text("deploy"))
    assert message == (
        "/skills/release/SKILL.md: name: 'deploy' disagrees with its folder name 'release'"
    )


def test_a_name_disagreeing_with_its_file_is_refused() -> None:
    as_file = SkillCandidate(Path("/skills/release.md"), "release", "file")
    message = refusal(skill_text("deploy"), as_file)
    assert message == "/skills/release.md: name: 'deploy' disagrees with its file name 'release.md'"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("Release", "'Release' must be lower-case"),
        ("re lease", "may hold only letters, digits and '-' (not ' ')"),
        ("re_lease", "may hold only letters, digits and '-' (not '_')"),
        ("-release", "must not start or end with '-'"),
        ("release-", "must not start or end with '-'"),
        ("re--lease", "must not contain '--'"),
        ("r" + "e" * 64, "at most 64 characters (it has 65)"),
        ("'yes'", "disagrees"),  # a quoted YAML string is fine as text, just not this name
    ],
)
def test_names_follow_the_spec(name: str, why: str) -> None:
    assert why in refusal(f"---\nname: {name}\ndescription: d\n---\n")


@pytest.mark.parametrize("name", ["2fa-setup", "a", "x1", "v2-3-4", "über-tool", "技能"])
def test_spec_names_load(name: str) -> None:
    assert parse(skill_text(name), SkillCandidate(HERE, name, "folder")).name == name


def test_names_compare_in_nfkc_form() -> None:
    # U+FB01 LATIN SMALL LIGATURE FI is "fi" in NFKC, as the reference validator reads it.
    doc = parse(skill_text("\ufb01le"), SkillCandidate(HERE, "file", "folder"))
    assert doc.name == "file"


def test_a_name_of_64_characters_loads() -> None:
    name = "r" + "e" * 63
    assert parse(skill_text(name), SkillCandidate(HERE, name, "folder")).name == name


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ("description: d\n", "name: required"),
        ("name: release\n", "description: required"),
        ("name: release\ndescription: '  '\n", "description: must not be empty"),
        ("name: release\ndescription:\n", "description: must not be empty"),
        ("name: [release]\ndescription: d\n", "name: must be text, not a list"),
        ("name: release\ndescription: [a]\n", "description: must be text, not a list"),
        ("name: release\ndescription: d\nlicense: {a: 1}\n", "license: must be text"),
        ("name: release\ndescription: d\nmetadata: [a]\n", "metadata: must be a map"),
        ("name: release\ndescription: d\nmetadata: {a: [1]}\n", "metadata.a: must be text"),
        ("name: release\ndescription: d\nallowed-tools: {a: b}\n", "allowed-tools: must be"),
        ("name: release\ndescription: d\ntags: a, b\n", "tags: must be a list"),
        ("name: release\ndescription: d\ntags: [a, [b]]\n", "tags[1]: must be text"),
        ("name: release\ndescription: d\ntags: ['']\n", "tags[0]: must not be empty"),
        ("name: release\ndescription: d\ntags: [" + "t" * 33 + "]\n", "tags[0]: at most 32"),
        ("- just\n- a list\n", "must be a map of keys to values"),
        ("name: [unclosed\n", "not valid YAML"),
        ("name: release\ndescription: &d d\ncompatibility: *d\n", "aliases are not allowed"),
        ("name: release\ndescription: &d d\n", "anchors and aliases are not allowed"),
        ("name: !!python/object:os.system x\ndescription: d\n", "YAML tags"),
        ("name: release\ndescription: !!str d\n", "YAML tags"),
    ],
)
def test_field_rules(frontmatter: str, expected: str) -> None:
    assert expected in refusal(f"---\n{frontmatter}---\nbody\n")


def test_at_most_ten_tags_after_normalising() -> None:
    eleven = ", ".join(f"t{i}" for i in range(11))
    assert "tags: at most 10 tags (it has 11)" in refusal(
        skill_text("release", extra=f"tags: [{eleven}]\n")
    )
    ten_with_repeats = ", ".join([*(f"t{i}" for i in range(10)), "T0", "t1"])
    assert len(parse(skill_text("release", extra=f"tags: [{ten_with_repeats}]\n")).tags) == 10


def test_non_utf8_text_is_refused() -> None:
    assert refusal(skill_text("release").encode() + b"\xff\xfe") == (
        "/skills/release/SKILL.md: is not UTF-8 text"
    )


# --- size limits --------------------------------------------------------------------


def test_an_oversized_file_is_refused_from_its_size_without_being_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "release" / "SKILL.md"
    path.parent.mkdir()
    with path.open("wb") as handle:  # sparse: no 1.2 MiB are ever written
        handle.write(skill_text("release").encode())
        handle.truncate(1200 * 1024)
    opened: list[object] = []

    def refuse_to_read(*args: object, **kwargs: object) -> object:
        opened.append(args)
        raise AssertionError("the file was opened")

    monkeypatch.setattr(Path, "open", refuse_to_read)
    monkeypatch.setattr(Path, "read_bytes", refuse_to_read)
    monkeypatch.setattr(Path, "read_text", refuse_to_read)
    monkeypatch.setattr("builtins.open", refuse_to_read)
    monkeypatch.setattr(os, "open", refuse_to_read)
    with pytest.raises(SkillLoadError) as caught:
        read_skill(SkillCandidate(path, "release", "folder"))
    assert "the file is too large (1,228,800 bytes; at most 1,048,576 bytes, 1 MiB)" in str(
        caught.value
    )
    assert opened == []


def test_a_file_of_exactly_1_mib_loads_with_warnings(tmp_path: Path) -> None:
    head = skill_text("release", body="")
    path = write_skill(tmp_path, "release", head + "x" * (MAX_FILE_BYTES - len(head)))
    assert path.stat().st_size == MAX_FILE_BYTES
    doc = read_skill(SkillCandidate(path, "release", "folder"))
    assert len(doc.body) == MAX_FILE_BYTES - len(head)
    assert any("tokens" in warning for warning in doc.warnings)


def test_read_skill_names_an_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "release" / "SKILL.md"
    with pytest.raises(SkillLoadError) as caught:
        read_skill(SkillCandidate(path, "release", "folder"))
    assert str(caught.value) == f"{path}: cannot be read (No such file or directory)"
