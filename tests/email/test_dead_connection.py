"""An IMAP connection that dies without a word, or is closed in the middle of a
command, on the real Dovecot behind a proxy (:mod:`tests.email.proxy`): the bot notices,
connects again and answers the mail that came meanwhile, well before the command
timeout (120 s here) could have ended its wait."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

from tests.channels.contract.daemon import running
from tests.email.proxy import Fault, Proxy
from tests.email.world import World
from thalos_bot_email.mailbox import KEEPALIVE, Mailbox

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SLOW_COMMANDS: dict[str, object] = {"timeout": 120.0}
"""Longer than every wait of these tests: a fix that leans on the timeout fails them."""


async def answered_after(
    world: World, tmp_path: Path, fault: Fault, settings: dict[str, object]
) -> int:
    """The bot, with ``settings``, reaching IMAP through a proxy armed with ``fault``:
    once it fired, a mail is sent, and answered. The connections the proxy carried."""
    async with Proxy(world.servers.imap_port) as proxy:
        world.imap_port = proxy.port
        world.settings = settings
        silence = proxy.arm(fault)
        async with running(world, tmp_path):  # type: ignore[arg-type]
            with anyio.fail_after(30):
                await silence.fired.wait()
            asked = await world.say("Still there?")
            await world.wait_for(lambda: len(world.answers()) == 1)
    assert world.answers()[0]["In-Reply-To"] == asked["Message-ID"]
    return proxy.connections


async def test_a_connection_gone_silent_during_idle_is_noticed_and_made_again(
    world: World, tmp_path: Path
) -> None:
    """The path to the server dies while the bot idles (no FIN, no RST): the IDLE's
    renewal gets no answer within 10 s, so the bot connects again. Before, it heard
    nothing until the renewal (each 25 minutes), then waited out the command timeout."""
    settings = {**SLOW_COMMANDS, "idle_renew": 2.0}
    fault = Fault(b"+ idling", from_server=True)
    assert await answered_after(world, tmp_path, fault, settings) >= 2


async def test_an_idle_never_acknowledged_is_given_up(world: World, tmp_path: Path) -> None:
    """The path dies as the bot begins its IDLE: the server's "+ idling" never comes,
    and after the command timeout the bot connects again. Before, it waited for ever."""
    await answered_after(world, tmp_path, Fault(b" IDLE\r\n"), {"timeout": 3.0})


@pytest.mark.parametrize("command", [b"UID SEARCH", b"UID FETCH"])
async def test_a_connection_closed_during_a_command_is_made_again(
    world: World, tmp_path: Path, command: bytes
) -> None:
    """The server goes (a restart) after the bot sent a command: the command fails at
    once and the bot connects again. Before, it waited out the command's timeout."""
    async with Proxy(world.servers.imap_port) as proxy:
        world.imap_port = proxy.port
        world.settings = dict(SLOW_COMMANDS)
        async with running(world, tmp_path):  # type: ignore[arg-type]
            await world.wait_for(lambda: world.idling("bot"))
            cut = proxy.arm(Fault(command, cut=True))
            asked = await world.say("Still there?")
            await world.wait_for(lambda: len(world.answers()) == 1)
    assert cut.fired.is_set()
    assert world.answers()[0]["In-Reply-To"] == asked["Message-ID"]


async def test_the_connection_has_tcp_keepalive(world: World) -> None:
    mailbox = await Mailbox.login(world.config(), world.password)
    try:
        sock = mailbox.client.protocol.transport.get_extra_info("socket")
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        for name, value in KEEPALIVE.items():
            if hasattr(socket, name):
                assert sock.getsockopt(socket.IPPROTO_TCP, getattr(socket, name)) == value
    finally:
        await mailbox.close()
