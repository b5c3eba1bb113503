"""``[provider] compaction`` in bot.toml: defaults, both TOML shapes, errors naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot.runtime.compaction import CompactionPolicy


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(text, encoding="utf-8")
    return path


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, text))
    return caught.value.problems


def test_defaults_match_the_runtime_policy(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "[provider]\n")).settings
    assert CompactionPolicy(**settings.provider.compaction.model_dump()) == CompactionPolicy()


def test_inline_table_and_sub_table_both_work(tmp_path: Path) -> None:
    inline = "[provider]\ncompaction = { threshold = 0.7, keep_recent_turns = 4 }\n"
    table = "[provider.compaction]\nthreshold = 0.7\nkeep_recent_turns = 4\nenabled = false\n"
    first = load_settings(write(tmp_path, inline)).settings.provider.compaction
    second = load_settings(write(tmp_path, table)).settings.provider.compaction
    assert (first.threshold, first.keep_recent_turns, first.enabled) == (0.7, 4, True)
    assert (second.threshold, second.keep_recent_turns, second.enabled) == (0.7, 4, False)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[provider]\ncompaction = { threshold = 1.5 }\n",
            "bot.toml: provider.compaction.threshold: input should be less than or equal to 0.95",
        ),
        (
            "[provider]\ncompaction = { keep_recent_turns = 0 }\n",
            "bot.toml: provider.compaction.keep_recent_turns: input should be greater than",
        ),
        (
            "[provider.compaction]\nthreshhold = 0.8\n",
            "bot.toml: provider.compaction.threshhold: unknown key (did you mean 'threshold'?)",
        ),
        (
            "[provider.compaction]\nenabled = 'yes please'\n",
            "bot.toml: provider.compaction.enabled: input should be a valid boolean",
        ),
    ],
)
def test_errors_name_the_file_and_the_key(tmp_path: Path, text: str, expected: str) -> None:
    found = problems(tmp_path, text)
    assert any(p.startswith(expected) for p in found), found
