"""Registers the console channel under the ``thalos_bot.channels`` entry-point group."""

from __future__ import annotations

import getpass
import math
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import anyio
from pydantic import BaseModel

from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import ChannelAdapter, InboundMessage
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.console.config import ConsoleConfig
from thalos_bot.console.render import ConsoleAdapter
from thalos_bot.console.source import ConsoleSource, read_interactive, read_piped
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.people import TERMINAL
from thalos_bot.domain.security import SecurityContext
from thalos_bot.storage.private import ensure_private_file

CHANNEL = ChannelId("console")
CONVERSATION = ConversationId("console")


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "console"


class ConsolePlugin:
    name = "console"
    config_model = ConsoleConfig

    def describe(self, config: BaseModel) -> str:
        assert isinstance(config, ConsoleConfig)
        roles = ", ".join(config.roles) or "none"
        return (
            f"this terminal or piped stdin, as principal {config.principal_id!r} (roles: {roles})"
        )

    @asynccontextmanager
    async def open(self, config: BaseModel, host: ChannelHost) -> AsyncIterator[ChannelPair]:
        assert isinstance(config, ConsoleConfig)
        channel = SecurityContext.of(config.principal_id, config.roles)
        sender = Seats(TERMINAL, host.people, channel, TERMINAL).sender(TERMINAL, _user())
        interactive = sys.stdin.isatty() and sys.stdout.isatty()

        def make(text: str) -> InboundMessage:
            return InboundMessage(
                CHANNEL, CONVERSATION, sender, text, datetime.now(UTC), anyio.Event()
            )

        send, receive = anyio.create_memory_object_stream[InboundMessage](math.inf)
        adapter: ChannelAdapter
        async with anyio.create_task_group() as group:
            if interactive:
                # The full-screen prompt and the Markdown renderer load only here: every
                # command that builds the channel table without opening the console, and
                # piped input, goes without them.
                from thalos_bot.console.screen import Screen
                from thalos_bot.console.terminal import TerminalAdapter

                history = (
                    ensure_private_file(host.state_dir / "console_history")
                    if config.history
                    else None
                )
                screen = Screen(sys.stdout, color="NO_COLOR" not in os.environ)
                terminal = TerminalAdapter(screen, flush_interval=config.flush_interval)
                adapter = terminal
                group.start_soon(read_interactive, send, make, history, screen, terminal.questions)
            else:
                adapter = ConsoleAdapter(
                    sys.stdout, color=False, flush_interval=config.flush_interval
                )
                group.start_soon(read_piped, send, sys.stdin, make)
            mode = "interactive terminal" if interactive else "piped stdin"
            yield ChannelPair(ConsoleSource(receive), adapter, f"console: {mode}")
            group.cancel_scope.cancel()


plugin = ConsolePlugin()
