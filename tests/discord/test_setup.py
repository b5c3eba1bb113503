"""Setting Discord up: the config refuses names for ids, `doctor` checks the token, the
Message Content intent and the listed channels against the fake, `init --discord` writes a
section the plugin accepts, and `check` describes it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.discord.harness import World, make_config
from tests.fakes.discord_api import DiscordFake
from thalos_bot.channels.registry import validate_channels
from thalos_bot.config.loader import load_settings
from thalos_bot_discord import TOKEN_ENV
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.doctor import discord_checks

pytestmark = pytest.mark.anyio


def test_names_and_empty_allowlists_are_refused_with_a_hint() -> None:
    with pytest.raises(ValidationError, match="Copy User ID"):
        DiscordConfig.model_validate({"enabled": True, "allowed_users": ["@ann"]})
    with pytest.raises(ValidationError, match="never means everyone"):
        DiscordConfig.model_validate({"enabled": True, "allowed_users": []})
    with pytest.raises(ValidationError, match="snowflakes"):
        DiscordConfig.model_validate({"allowed_users": [42]})


async def test_doctor_reports_the_bot_the_intent_and_the_channels(
    fake: DiscordFake, world: World
) -> None:
    config = make_config(fake, world, guild_channels=[world.listed, 123456789012345678])
    checks = await discord_checks(config, offline=False)
    assert [(c.name, c.outcome) for c in checks] == [
        ("Discord token (users/@me)", "ok"),
        ("Discord Message Content intent", "ok"),
        (f"Discord channel {world.listed}", "ok"),
        ("Discord channel 123456789012345678", "fail"),
    ]


async def test_doctor_says_when_the_intent_is_off_or_the_token_wrong(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    with DiscordFake(privileged_intents=()) as fake:
        monkeypatch.setenv(TOKEN_ENV, fake.token)
        config = make_config(fake, world, guild_channels=[])
        intent = (await discord_checks(config, offline=False))[1]
        monkeypatch.setenv(TOKEN_ENV, "wrong")
        (token,) = await discord_checks(config, offline=False)
    assert intent.outcome == "fail"
    assert "Privileged Gateway Intents" in intent.fix
    assert token.outcome == "fail"
    assert "wrong" not in token.detail


def test_init_writes_a_discord_section_the_plugin_accepts(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "thalos_bot", "init", str(tmp_path), "--discord", "--no-telegram"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "DISCORD_BOT_TOKEN" in done.stdout
    loaded = load_settings(tmp_path / "bot.toml")
    validated = validate_channels(loaded.settings, "bot.toml")
    section = validated["discord"]
    assert isinstance(section, DiscordConfig)
    assert (section.enabled, section.allowed_users) == (False, [])
