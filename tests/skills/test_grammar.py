"""The skill file grammar: what loads, what is refused and with which words."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from tests.skills.conftest import skill_text, write_skill
from thalos_bot.skills.document import MAX_BODY_BYTES, MAX_FILE_BYTES, SkillDocument, SkillLoadError
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


def test_the_name_matches_its_folder_or_file_case_insensitively() -> None:
    assert parse(skill_text("release"), SkillCandidate(HERE, "Release", "folder")).name == "release"
    as_file = SkillCandidate(Path("/skills/RELEASE.md"), "RELEASE", "file")
    assert parse(skill_text("release"), as_file).name == "release"


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
        ("Release", "is not a skill name"),
        ("1release", "is not a skill name"),
        ("re lease", "is not a skill name"),
        ("r" + "e" * 64, "is not a skill name"),
        ("'yes'", "disagrees"),  # a quoted YAML string is fine as text, just not this name
    ],
)
def test_names_follow_the_pattern(name: str, why: str) -> None:
    assert why in refusal(f"---\nname: {name}\ndescription: d\n---\n")


def test_a_name_of_64_characters_loads() -> None:
    name = "r" + "e" * 63
    assert parse(skill_text(name), SkillCandidate(HERE, name, "folder")).name == name


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ("description: d\n", "name: required"),
        ("name: release\n", "description: required"),
        ("name: release\ndescription: '  '\n", "description: must not be empty"),
        ("name: true\ndescription: d\n", "name: must be text, not true/false"),
        ("name: release\ndescription: [a]\n", "description: must be text, not a list"),
        ("name: release\ndescription: " + "x" * 301 + "\n", "description: at most 300"),
        ("name: release\ndescription: d\nlicense: {a: 1}\n", "license: must be text"),
        ("name: release\ndescription: d\nmetadata: [a]\n", "metadata: must be a map"),
        ("name: release\ndescription: d\nmetadata: {a: [1]}\n", "metadata.a: must be text"),
        ("name: release\ndescription: d\nallowed-tools: 3\n", "allowed-tools: must be text"),
        ("name: release\ndescription: d\ntags: a, b\n", "tags: must be a list"),
        ("name: release\ndescription: d\ntags: [a, 3]\n", "tags[1]: must be text"),
        ("name: release\ndescription: d\ntags: ['']\n", "tags[0]: must not be empty"),
        ("name: release\ndescription: d\ntags: [" + "t" * 33 + "]\n", "tags[0]: at most 32"),
        ("- just\n- a list\n", "must be a map of keys to values"),
        ("name: [unclosed\n", "not valid YAML"),
        ("name: release\ndescription: &d d\ncompatibility: *d\n", "aliases are not allowed"),
        ("name: !!python/object:os.system x\ndescription: d\n", "not valid YAML"),
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


def test_a_description_of_300_characters_loads() -> None:
    assert len(parse(skill_text("release", "x" * 300)).description) == 300


def test_non_utf8_text_is_refused() -> None:
    assert refusal(skill_text("release").encode() + b"\xff\xfe") == (
        "/skills/release/SKILL.md: is not UTF-8 text"
    )


# --- size limits --------------------------------------------------------------------


def test_body_limit_is_64_kib() -> None:
    head = "---\nname: release\ndescription: d\n---\n"
    assert len(parse(head + "x" * MAX_BODY_BYTES).body) == MAX_BODY_BYTES
    message = refusal(head + "x" * (MAX_BODY_BYTES + 1))
    assert "the body is too large (65,537 bytes; at most 65,536 bytes, 64 KiB)" in message


def test_body_limit_counts_utf8_bytes_after_normalising() -> None:
    head = "---\nname: release\ndescription: d\n---\n"
    assert parse(head + "\r\n" * MAX_BODY_BYTES).body == "\n" * MAX_BODY_BYTES
    assert "the body is too large" in refusal(head + "é" * (MAX_BODY_BYTES // 2 + 1))


def test_an_oversized_file_is_refused_from_its_size_without_being_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "release" / "SKILL.md"
    path.parent.mkdir()
    with path.open("wb") as handle:  # sparse: no 300 KiB are ever written
        handle.write(skill_text("release").encode())
        handle.truncate(300 * 1024)
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
    assert "the file is too large (307,200 bytes; at most 262,144 bytes, 256 KiB)" in str(
        caught.value
    )
    assert opened == []


def test_a_file_of_exactly_256_kib_is_read(tmp_path: Path) -> None:
    head = skill_text("release", body="")
    path = write_skill(tmp_path, "release", head + "x" * (MAX_FILE_BYTES - len(head)))
    assert path.stat().st_size == MAX_FILE_BYTES
    with pytest.raises(SkillLoadError) as caught:  # read, then refused for its body
        read_skill(SkillCandidate(path, "release", "folder"))
    assert "the body is too large" in str(caught.value)


def test_read_skill_names_an_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "release" / "SKILL.md"
    with pytest.raises(SkillLoadError) as caught:
        read_skill(SkillCandidate(path, "release", "folder"))
    assert str(caught.value) == f"{path}: cannot be read (No such file or directory)"
