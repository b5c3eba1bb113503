"""Discord passes the channel kit's contract suite over the Discord fake."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.channels.contract.suite import ContractSuite
from tests.channels.contract.transport import Choice, Shown, Style, Where, Who
from tests.discord.harness import World, make_config
from tests.fakes.discord_api import DiscordFake
from tests.fakes.discord_markdown import shown as render
from thalos_bot.channels.registry import ChannelPlugin
from thalos_bot_discord import TOKEN_ENV
from thalos_bot_discord.config import DiscordConfig
from thalos_bot_discord.manifest import manifest as plugin
from thalos_bot_discord.wire import LIMIT

CREATE = "POST /channels/{channel_id}/messages"
_LABELS: dict[Choice, str] = {
    "once": "Approve",
    "session": "Approve for this session",
    "deny": "Deny",
}
_STYLES: frozenset[str] = frozenset({"bold", "italic", "strike", "code", "pre", "link"})


class DiscordContract:
    plugin: ChannelPlugin = plugin
    message_limit = LIMIT

    def __init__(self, fake: DiscordFake, world: World) -> None:
        self.fake = fake
        self.world = world

    def config(self) -> DiscordConfig:
        return make_config(self.fake, self.world)

    def environment(self) -> dict[str, str]:
        return {TOKEN_ENV: self.fake.token}

    async def started(self) -> None:
        await self.wait_for(self.fake.connected)

    def _user(self, who: Who) -> int:
        return self.world.owner if who == "user" else self.world.stranger

    async def say(
        self, text: str, *, who: Who = "user", where: Where = "dm", mention: bool = False
    ) -> None:
        if where == "group":
            self.fake.say_in(self.world.listed, self._user(who), text, mention=mention)
        else:
            self.fake.say_dm(self._user(who), text)

    async def send_image(self, data: bytes, caption: str, *, who: Who = "user") -> None:
        self.fake.say_dm(self._user(who), caption, attachments=[("image.png", data)])

    async def send_voice(self, data: bytes, seconds: float) -> None:
        self.fake.say_dm(self._user("user"), "", voice=(data, seconds))

    def voices(self) -> list[float | None]:
        """The bot's voice messages: flagged IS_VOICE_MESSAGE, as Discord shows them."""
        channel = self.fake.dm_channel_id(self.world.owner)
        return [
            float(m["attachments"][0]["duration_secs"])
            for m in self.fake.messages(channel)
            if m["author"]["id"] == str(self.fake.bot_id) and m.get("flags", 0) & (1 << 13)
        ]

    def shown(self, *, who: Who = "user", where: Where = "dm") -> list[Shown]:
        channel = (
            self.world.listed if where == "group" else self.fake.dm_channel_id(self._user(who))
        )
        mine = [
            m for m in self.fake.messages(channel) if m["author"]["id"] == str(self.fake.bot_id)
        ]
        return [_shown(m) for m in mine]

    async def wait_for(self, predicate: object, timeout: float = 15.0) -> None:
        assert callable(predicate)
        check: Callable[[], object] = predicate
        await self.fake.wait_for(lambda: check() or None, timeout)

    def flood_wait(self, seconds: float) -> None:
        self.fake.limits.forced[CREATE] = seconds

    def sent_during_wait(self) -> int:
        return len(self.fake.limits.violations)

    def flooded(self) -> bool:
        return CREATE not in self.fake.limits.forced

    def refuse_next_send(self) -> None:
        self.fake.rest.refuse_next[CREATE] = 1

    def in_doubt(self) -> None:
        self.fake.rest.drop_after[CREATE] = 1

    async def answer_approval(self, choice: Choice, *, who: Who = "user") -> None:
        question = self._question()
        assert question is not None, "no question is open"
        custom = next(
            b["custom_id"]
            for row in question["components"]
            for b in row["components"]
            if b["label"] == _LABELS[choice]
        )
        before = len(self.fake.callbacks)
        self.fake.press(int(question["id"]), self._user(who), custom)
        await self.wait_for(lambda: len(self.fake.callbacks) > before)

    def asked(self) -> bool:
        return self._question() is not None

    def _question(self) -> dict[str, Any] | None:
        channel = self.fake.dm_channel_id(self.world.owner)
        return next((m for m in self.fake.messages(channel) if m["components"]), None)


def _shown(message: dict[str, Any]) -> Shown:
    text, styles = render(message["content"])
    kept: frozenset[Style] = frozenset(s for s in styles if s in _STYLES)  # type: ignore[misc]
    return Shown(text, kept, image=bool(message["attachments"]))


class TestDiscordContract(ContractSuite):
    @pytest.fixture
    def transport(self, fake: DiscordFake, tmp_path: Path) -> DiscordContract:
        return DiscordContract(fake, World.of(fake, tmp_path / "world"))
