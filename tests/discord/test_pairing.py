"""`thalos-bot discord pair` over the fake: the code sent in a DM adds its sender to
allowed_users (comments kept) and turns the channel on; strangers' wrong codes do
nothing."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from tests.discord.harness import World
from tests.fakes.discord_api import DiscordFake
from thalos_bot.channels.admission.pair_command import PAIRED
from thalos_bot.channels.ports import EXIT_PLATFORM_SETTING, EXIT_UNAUTHORIZED
from thalos_bot_discord import TOKEN_ENV
from thalos_bot_discord.pair import pair

pytestmark = pytest.mark.anyio


async def test_pairing_adds_whoever_sends_the_code(fake: DiscordFake, world: World) -> None:
    path = world.state / "bot.toml"
    path.write_text(
        "# my bot\n[channels.discord]\nenabled = false  # on after pairing\nallowed_users = []\n"
        f'base_url = "{fake.base_url}"\ngateway_url = "{fake.gateway_url}"\n'
        'guild_ready_timeout = "0.05s"\n',
        encoding="utf-8",
    )
    lines: list[str] = []
    result: list[int] = []

    async def run() -> None:
        result.append(await pair(path, yes=True, ask=None, show=lines.append))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await fake.wait_for(lambda: fake.connected() and len(lines) >= 2)
        code = re.search(r"[A-Z2-9]{4}-[A-Z2-9]{4}", "\n".join(lines))
        assert code is not None
        fake.say_dm(world.stranger, "ABCD-EFGH")
        fake.say_dm(world.owner, code.group(0).lower())
        await fake.wait_for(lambda: result)
    assert result == [0]
    text = path.read_text(encoding="utf-8")
    assert f"allowed_users = [{world.owner}]" in text
    assert "enabled = true" in text
    assert "# my bot" in text
    assert fake.texts(fake.dm_channel_id(world.owner)) == [PAIRED]
    assert fake.texts(fake.dm_channel_id(world.stranger)) == []


async def test_a_refused_token_ends_pairing_with_the_channels_exit_code(
    fake: DiscordFake, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = world.state / "bot.toml"
    path.write_text(
        f'[channels.discord]\nbase_url = "{fake.base_url}"\ngateway_url = "{fake.gateway_url}"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv(TOKEN_ENV, "not-the-token")
    lines: list[str] = []
    assert await pair(path, yes=True, ask=None, show=lines.append) == EXIT_UNAUTHORIZED
    refused = f"Discord refused the token in {TOKEN_ENV} (401)"
    assert lines == [
        f"error: channels.discord: {refused}; reset it in the Developer Portal (Bot, Reset Token)"
    ]
    assert "not-the-token" not in "\n".join(lines)


async def test_without_the_message_content_intent_pairing_says_so_and_exits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway closes with 4014 (the intent is off): the command ends with the
    daemon's sentence and exit code for it, not with a traceback."""
    with DiscordFake(privileged_intents=()) as fake:
        monkeypatch.setenv(TOKEN_ENV, fake.token)
        path = tmp_path / "bot.toml"
        path.write_text(
            f'[channels.discord]\nbase_url = "{fake.base_url}"\n'
            f'gateway_url = "{fake.gateway_url}"\n',
            encoding="utf-8",
        )
        lines: list[str] = []
        with anyio.fail_after(30):
            code = await pair(path, yes=True, ask=None, show=lines.append)
    assert code == EXIT_PLATFORM_SETTING
    assert "Message Content intent" in lines[-1]
    assert lines[-1].startswith("error: channels.discord: ")
