"""The gateway under faults: a RESUME replay never starts a second turn, a socket dropped
mid-answer loses nothing, an invalid session re-identifies, a restart answers anew, and a
missing Message Content intent stops the channel with a clear error."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from tests.discord.harness import World, _host, make_config, running_bot
from tests.fakes.discord_api import DiscordFake
from thalos_bot.channels.notices import COMMAND_NAMES
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot_discord import receiver
from thalos_bot_discord.manifest import manifest as plugin

pytestmark = pytest.mark.anyio


def answers(*texts: str) -> ScriptedProvider:
    return ScriptedProvider([[Say(t)] for t in texts])


async def test_a_resume_replay_does_not_start_a_second_turn(
    fake: DiscordFake, world: World
) -> None:
    fake.gateway.replay_overlap = 10
    async with running_bot(fake, world, answers("one", "two")) as bot:
        fake.say_dm(world.owner, "first")
        await bot.texts(bot.dm(), 1)
        fake.drop()
        await fake.wait_for(lambda: fake.gateway.resumes == 1 and fake.connected())
        fake.say_dm(world.owner, "second")
        await bot.texts(bot.dm(), 2)
    assert fake.texts(bot.dm()) == ["one", "two"]
    assert [r.messages[-1].text for r in bot.provider.requests] == ["first", "second"]


async def test_a_socket_dropped_mid_answer_loses_nothing(fake: DiscordFake, world: World) -> None:
    slow = ScriptedProvider(
        [[Say("part one, ", "part two, ", "part three.", delay=0.3)], [Say("after")]]
    )
    async with running_bot(fake, world, slow) as bot:
        fake.say_dm(world.owner, "go")
        await bot.texts(bot.dm(), 1)
        fake.drop()
        await fake.wait_for(lambda: fake.texts(bot.dm()) == ["part one, part two, part three."])
        await fake.wait_for(lambda: fake.gateway.resumes == 1 and fake.connected())
        fake.say_dm(world.owner, "still there?")
        await bot.texts(bot.dm(), 2)
    assert fake.texts(bot.dm()) == ["part one, part two, part three.", "after"]
    assert fake.gateway.identifies == 1, "resumed, not re-identified"


async def test_an_invalid_session_identifies_again(fake: DiscordFake, world: World) -> None:
    async with running_bot(fake, world, answers("one", "two")) as bot:
        fake.say_dm(world.owner, "first")
        await bot.texts(bot.dm(), 1)
        fake.invalidate(resumable=False)
        await fake.wait_for(lambda: fake.gateway.identifies == 2 and fake.connected())
        fake.say_dm(world.owner, "second")
        await bot.texts(bot.dm(), 2)
    assert fake.texts(bot.dm()) == ["one", "two"]


async def test_a_drop_then_an_unknown_session_identifies_again(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(fake, world, answers("one", "two")) as bot:
        fake.say_dm(world.owner, "first")
        await bot.texts(bot.dm(), 1)
        with fake.lock:
            for session in fake.gateway.sessions.values():
                session.valid = False
        fake.drop()
        await fake.wait_for(lambda: fake.gateway.identifies == 2 and fake.connected())
        fake.say_dm(world.owner, "second")
        await bot.texts(bot.dm(), 2)
    assert fake.texts(bot.dm()) == ["one", "two"]


async def test_a_restart_catches_up_on_what_was_said_while_down(
    fake: DiscordFake, world: World
) -> None:
    async with running_bot(fake, world, answers("one", "one-b")) as bot:
        fake.say_dm(world.owner, "first")
        await bot.texts(bot.dm(), 1)
        fake.say_in(world.listed, world.owner, "in the channel", mention=True)
        await bot.texts(world.listed, 1)
    fake.say_dm(world.owner, "while down")
    fake.say_in(world.listed, world.owner, "also while down", mention=True)
    async with running_bot(fake, world, answers("two", "three", "four")) as bot:
        await bot.texts(bot.dm(), 2)
        await bot.texts(world.listed, 2)
        fake.say_dm(world.owner, "after")
        await bot.texts(bot.dm(), 3)
    assert sorted(r.messages[-1].text for r in bot.provider.requests) == [
        "after",
        "also while down",
        "while down",
    ]
    assert fake.gateway.identifies == 2, "a new session: nothing of the old one was replayed"
    # Registered once, not again on the restart.
    assert [c["name"] for c in fake.world.commands] == list(COMMAND_NAMES)


async def test_without_the_message_content_intent_the_channel_stops(tmp_path: Path) -> None:
    with DiscordFake(privileged_intents=()) as fake, pytest.MonkeyPatch.context() as patch:
        from thalos_bot_discord import TOKEN_ENV

        patch.setenv(TOKEN_ENV, fake.token)
        with pytest.raises(BaseExceptionGroup) as caught:
            async with running_bot(fake, World.of(fake, tmp_path)):
                pass
    (fatal,) = [e for e in _leaves(caught.value) if isinstance(e, ChannelFatalError)]
    assert "Message Content intent" in fatal.message
    assert fatal.exit_code == 78
    assert fake.gateway.closes == [4014]


async def test_a_wrong_token_stops_the_channel(
    fake: DiscordFake, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from thalos_bot_discord import TOKEN_ENV

    monkeypatch.setenv(TOKEN_ENV, "not-the-token")
    with pytest.raises(BaseException) as caught:
        async with running_bot(fake, world):
            pass
    (fatal,) = [e for e in _leaves(caught.value) if isinstance(e, ChannelFatalError)]
    assert "refused the token" in fatal.message
    assert fatal.exit_code == 77
    assert fake.token not in fatal.message


async def test_a_gateway_not_reached_yet_says_it_is_retrying(
    fake: DiscordFake, world: World
) -> None:
    # The daemon tells systemd it is ready (degraded) once every channel receives or
    # retries: a gateway that cannot be reached at start must say the second.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    config = make_config(fake, world, gateway_url=f"ws://127.0.0.1:{closed}/")
    async with (
        await Database.open(world.state / "thalos.db", migrations=ALL_MIGRATIONS) as db,
        plugin.open(config, _host(None, world.state, db)) as pair,
    ):
        with anyio.fail_after(10):
            await pair.retrying.wait()
        assert not pair.receiving.is_set()
        assert pair.health.last_error == "gateway disconnected"


async def test_an_event_that_fails_is_logged_by_its_error_type_never_its_text(
    fake: DiscordFake, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(message: object) -> tuple[()]:
        raise ValueError(getattr(message, "content", ""))  # what a bug's error may quote

    monkeypatch.setattr(receiver, "remote_files", broken)
    with capture_logs() as logs:
        async with running_bot(fake, world):
            fake.say_dm(world.owner, "private words")
            with anyio.fail_after(10):  # logged, not shown in the fake: looked for
                while not any(e["event"] == "discord_update_failed" for e in logs):
                    await anyio.sleep(0.01)
    (failed,) = [e for e in logs if e["event"] == "discord_update_failed"]
    assert failed["error"] == "ValueError"
    assert "exc_info" not in failed, "no traceback: its text may quote the message"


async def test_a_message_in_a_server_not_cached_yet_is_answered_there_not_in_a_dm(
    fake: DiscordFake, world: World
) -> None:
    late = fake.add_guild("late")
    channel = fake.add_channel(late, "bot")
    with fake.lock:  # left out of the gateway's GUILD_CREATEs: discord.py never caches it
        hidden = fake.world.guilds.pop(late)
    listed = [world.listed, channel]
    async with running_bot(fake, world, answers("here", "private"), guild_channels=listed) as bot:
        with fake.lock:
            fake.world.guilds[late] = hidden
        fake.say_in(channel, world.owner, "hello", mention=True)
        assert await bot.texts(channel, 1) == ["here"]
        fake.say_dm(world.owner, "just us")
        assert await bot.texts(bot.dm(), 1) == ["private"]
    in_dm = bot.provider.requests[-1].messages
    assert [m.text for m in in_dm] == ["just us"], "the DM's session never saw the channel"


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]
