"""``[memory]`` settings, and the parts built from them fitting the seams they plug into."""

from __future__ import annotations

import pytest

from thalos_bot.config.loader import ConfigError, validate
from thalos_bot.config.memory import CONTAINMENT_THRESHOLD, DEDUPE_THRESHOLD, MemorySettings
from thalos_bot.domain.prompt import PromptContributor
from thalos_bot.memory.assembly import build_memory
from thalos_bot.storage.database import Database
from thalos_bot.tools.source import ToolSource


def test_defaults() -> None:
    settings = MemorySettings()
    assert settings.tools is True
    assert settings.shared_owner is None
    assert settings.scope == "owner"
    assert (settings.dedupe_threshold, settings.containment_threshold) == (
        DEDUPE_THRESHOLD,
        CONTAINMENT_THRESHOLD,
    )


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"shared_owner": "two words"}, "memory.shared_owner: does not match"),
        ({"shared_owner": ""}, "memory.shared_owner:"),
        ({"scope": "global"}, "memory.scope:"),
        ({"dedupe_threshold": 0.1}, "memory.dedupe_threshold:"),
        ({"tool": False}, "memory.tool: unknown key (did you mean 'tools'?)"),
    ],
)
def test_mistakes_name_the_key(raw: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        validate(MemorySettings, raw, "bot.toml", "memory")
    assert any(problem in p for p in caught.value.problems), caught.value.problems


@pytest.mark.anyio
async def test_build_memory_wires_the_settings_through() -> None:
    async with await Database.open_memory() as db:
        parts = build_memory(db, MemorySettings(tools=False, dedupe_threshold=0.9))
        source: ToolSource = parts.source
        contributor: PromptContributor = parts.contributor
        assert source.name == "memory"
        assert source.tools() == ()
        assert parts.store.dedupe_threshold == 0.9
        assert contributor is parts.contributor


def test_with_memory_is_right_before_and_after_the_wiring() -> None:
    from thalos_bot.memory.schema import MEMORY_MIGRATIONS, with_memory
    from thalos_bot.storage.migrations import MIGRATIONS

    names = [m.name for m in with_memory()]
    assert names[-6:] == [
        "0100_memory_records",
        "0101_memory_fts",
        "0300_memory_vectors",
        "0301_memory_fts_vocab",
        "0310_memory_fts_shards",
        "0320_task_progress",
    ]
    assert len(set(names)) == len(names)
    wired = [*MIGRATIONS, *MEMORY_MIGRATIONS]
    assert with_memory(wired) == wired
