"""The Discord channel under a gateway fuzzer: the real plugin, discord.py, pump and
runtime on an event loop of their own (a blocking portal's thread), against the Discord
fake over loopback, fed one dispatch at a time from the caller's thread.

After each dispatch comes a marker: a direct message from someone not allowed, which the
channel logs once it has read it, after everything dispatched before (the gateway is
read in order, and so is the channel's queue). So the marker's line means the event
went all the way through and the connection lives. What counts as a crash: a marker
never read (the connection ended or stopped reading), a new IDENTIFY or RESUME (it was
dropped), an error logged by discord.py's handlers or the command tree, or the channel's
own ``discord_update_failed``. Meanwhile a ticker on the
channel's loop measures the longest the loop was kept from running (the stall).

The heap is settled once the channel has started, as the daemon settles it
(:func:`thalos_bot.service.heap.settle_heap`): without it every full collection scans
the start-up objects of the channel, the fake and hypothesis together, and the stall
measured is the harness's (0.3-2.9 s on a loaded machine, one at each gen-2 collection),
not the channel's.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
from collections.abc import Iterator, MutableMapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import structlog
from anyio.from_thread import BlockingPortal, start_blocking_portal
from structlog.processors import format_exc_info
from structlog.testing import capture_logs

from tests.discord.gateway_events import Ids, plain_message
from tests.discord.harness import Bot, World, running_bot
from tests.fakes.discord_api import DiscordFake
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot.service.heap import settle_heap
from thalos_bot_discord import TOKEN_ENV

TICK = 0.01
POLL = 0.002
MARKER_BASE = 1 << 60
"""Markers' ids (a snowflake's range, far above the fake's own ids)."""
ANSWER_WITHIN = 30.0
"""How long a heartbeat's answer may take before the connection counts as gone (a
liveness bound, far above any healthy answer; not a measured figure)."""
FAILED_EVENTS = {"discord_update_failed"}


class Errors(logging.Handler):
    """discord.py's logged errors (a handler's or the command tree's exception)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        self.records.append(f"{record.getMessage()}: {type(error).__name__}: {error}"[:200])


class Stall:
    """The longest the channel's loop went without running a :data:`TICK` timer."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.ticks = 0

    async def run(self) -> None:
        while True:
            began = time.monotonic()
            await asyncio.sleep(TICK)
            self.longest = max(self.longest, time.monotonic() - began - TICK)
            self.ticks += 1


class GatewayFuzz:
    def __init__(self, fake: DiscordFake, bot: Bot, portal: BlockingPortal) -> None:
        self.fake = fake
        self.bot = bot
        self.portal = portal
        self.stall = Stall()
        self.errors = Errors()
        self.logs: list[MutableMapping[str, Any]] = []
        self._markers = 0
        world = bot.world
        session = next(iter(fake.gateway.sessions))
        self.ids = Ids(
            fake.bot_id,
            world.owner,
            world.stranger,
            world.guild,
            world.listed,
            world.unlisted,
            fake.dm_channel_id(world.owner),
            session,
            fake.gateway_url,
            f"{fake.base}/attachments/",
        )
        self.bot_user = dict(fake.world.bot)

    def feed(self, name: str, data: Any) -> str | None:
        """Dispatch one event, then a marker; None when both were read and everything
        still stands, else what broke."""
        fake = self.fake
        gateway = fake.gateway
        self._markers += 1
        marker = MARKER_BASE + self._markers
        with fake.lock:
            before = (gateway.identifies, gateway.resumes)
            gateway.dispatch(name, data)
            gateway.dispatch("MESSAGE_CREATE", self._marker(marker))
        deadline = time.monotonic() + ANSWER_WITHIN
        while not self._marked(marker):
            with fake.lock:
                now = (gateway.identifies, gateway.resumes)
                connected = fake.connected()
            if now != before:
                return "the gateway connection was dropped and made again"
            if not connected:
                return "the gateway connection ended"
            if time.monotonic() > deadline:
                return "the marker was not read: the channel stopped reading"
            time.sleep(POLL)
        return self.failure()

    def _marker(self, author: int) -> dict[str, Any]:
        """A DM from someone not allowed, whose id is the marker: the channel logs it as
        a stranger's once it has read it, after everything dispatched before."""
        return plain_message(author, author + 1, author, "marker", "marker")

    def _marked(self, marker: int) -> bool:
        return any(
            entry.get("event") == "discord_message_from_stranger" and entry.get("user") == marker
            for entry in reversed(self.logs)
        )

    def failure(self) -> str | None:
        if self.errors.records:
            return self.errors.records.pop(0)
        for entry in self.logs:
            if entry.get("event") in FAILED_EVENTS:
                self.logs.clear()
                return f"{entry['event']}: {entry.get('exception', entry)}"[-600:]
        self.logs.clear()
        return None

    def still_answers(self, text: str = "are you there") -> bool:
        """A direct message from the owner is answered (the channel still works)."""
        before = len(self.fake.texts(self.ids.dm))
        self.fake.say_dm(self.bot.world.owner, text)

        async def answered() -> None:
            await self.bot.texts(self.ids.dm, before + 1, timeout=ANSWER_WITHIN)

        try:
            self.portal.call(answered)
        except AssertionError:
            return False
        return True


def _always(_: Any) -> list[Say]:
    return [Say("ok")]


@contextmanager
def fuzzing(state: Path) -> Iterator[GatewayFuzz]:
    """The channel running against a fresh fake, ready to be fed."""
    saved = os.environ.get(TOKEN_ENV)
    with DiscordFake(window=0.05) as fake, start_blocking_portal() as portal:
        os.environ[TOKEN_ENV] = fake.token
        world = World.of(fake, state)
        provider = ScriptedProvider(default=_always)
        running: AbstractContextManager[Bot] = portal.wrap_async_context_manager(
            running_bot(fake, world, provider)
        )
        errors = Errors()
        wrapper = structlog.get_config()["wrapper_class"]
        # the markers are info lines: read them whatever level the caller keeps
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
        library = logging.getLogger("discord")
        library.addHandler(errors)
        try:
            with capture_logs(processors=[format_exc_info]) as logs, running as bot:
                fuzz = GatewayFuzz(fake, bot, portal)
                fuzz.errors, fuzz.logs = errors, logs
                settle_heap()  # as the daemon does once started (thalos_bot.service.heap)
                ticker = portal.start_task_soon(fuzz.stall.run)
                try:
                    yield fuzz
                finally:
                    ticker.cancel()
        finally:
            gc.unfreeze()  # the rest of the process collects as before
            structlog.configure(wrapper_class=wrapper)
            library.removeHandler(errors)
            if saved is None:
                os.environ.pop(TOKEN_ENV, None)
            else:
                os.environ[TOKEN_ENV] = saved
