"""Fixtures for the Discord channel tests: the Discord fake (fast buckets: 5 writes per
0.5 s per channel) and its token in the environment (made at run time)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.discord.harness import World
from tests.fakes.discord_api import DiscordFake
from thalos_bot_discord import TOKEN_ENV


@pytest.fixture
def fake() -> Iterator[DiscordFake]:
    with DiscordFake(window=0.5) as f:
        yield f
    assert f.limits.violations == [], "a request went out before its bucket's reset"


@pytest.fixture
def world(fake: DiscordFake, tmp_path: Path) -> World:
    return World.of(fake, tmp_path)


@pytest.fixture(autouse=True)
def _token_in_env(fake: DiscordFake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, fake.token)
