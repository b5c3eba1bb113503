"""``[skills]`` settings: defaults, validation, and roots relative to bot.toml."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from thalos_bot.config.loader import ConfigError, validate
from thalos_bot.config.skills import SkillsSettings, skills_base_dir


def test_defaults() -> None:
    settings = SkillsSettings()
    assert settings.roots == [Path("skills")]
    assert not settings.allow_unknown_keys
    assert settings.catalogue_chars == 4000
    assert (settings.search_top_k, settings.search_max_top_k, settings.search_overfetch) == (
        5,
        20,
        4,
    )


def test_relative_roots_resolve_against_the_config_folder(tmp_path: Path) -> None:
    settings = SkillsSettings(roots=[Path("skills"), Path("../shared/skills"), Path("/abs")])
    base = tmp_path / "etc"
    assert settings.resolved_roots(base) == [
        (base / "skills").resolve(),
        (tmp_path / "shared" / "skills").resolve(),
        Path("/abs"),
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"rots": ["x"]}, "bot.toml: skills.rots: unknown key (did you mean 'roots'?)"),
        ({"roots": [""]}, "bot.toml: skills.roots: a root must be a non-empty path"),
        ({"catalogue_chars": 10}, "bot.toml: skills.catalogue_chars: "),
        ({"search_top_k": 30}, "bot.toml: skills.search_top_k: 30 is more than search_max_top_k"),
    ],
)
def test_problems_name_the_key(raw: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        validate(SkillsSettings, raw, "bot.toml", prefix="skills")
    assert caught.value.problems[0].startswith(expected), caught.value.problems


def test_settings_are_frozen() -> None:
    with pytest.raises(ValidationError):
        SkillsSettings().roots = []  # type: ignore[misc]


def test_the_base_dir_is_the_config_folder_else_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert skills_base_dir(tmp_path / "etc" / "bot.toml") == tmp_path / "etc"
    monkeypatch.chdir(tmp_path)
    assert skills_base_dir(None) == tmp_path
