"""Signal passes the channel kit's contract suite over the fake signal-cli daemon."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from tests.channels.contract.suite import ContractSuite
from tests.channels.contract.transport import (
    Choice,
    Shown,
    Style,
    Where,
    Who,
)
from tests.fakes.signal_cli import SignalCliFake
from tests.fakes.signal_cli_state import Message, Person
from tests.signal.conftest import make_config
from thalos_bot.channels.approvals.reactions import CHOICES
from thalos_bot.channels.registry import ChannelPlugin
from thalos_bot_signal import ACCOUNT_ENV
from thalos_bot_signal.config import SignalConfig
from thalos_bot_signal.manifest import manifest as plugin
from thalos_bot_signal.wire import LIMIT

EMOJI: dict[Choice, str] = {"once": "✅", "session": "🔁", "deny": "❌"}
STYLES: dict[str, Style] = {
    "BOLD": "bold",
    "ITALIC": "italic",
    "STRIKETHROUGH": "strike",
    "MONOSPACE": "code",
}


class SignalContract:
    plugin: ChannelPlugin = plugin
    message_limit = LIMIT
    labelled_links = False

    def __init__(self, fake: SignalCliFake) -> None:
        self.fake = fake

    def config(self) -> SignalConfig:
        return make_config(self.fake)

    def environment(self) -> dict[str, str]:
        return {ACCOUNT_ENV: self.fake.world.bot.number}

    async def started(self) -> None:
        await self.wait_for(lambda: self.fake.streams > 0)

    def _person(self, who: Who) -> Person:
        return self.fake.world.user if who == "user" else self.fake.world.stranger

    async def say(
        self, text: str, *, who: Who = "user", where: Where = "dm", mention: bool = False
    ) -> None:
        self.fake.say(text, self._person(who), group=where == "group", mention=mention)

    async def send_image(self, data: bytes, caption: str, *, who: Who = "user") -> None:
        self.fake.say(caption, self._person(who), attachments=[(data, "image/png", "chart.png")])

    async def send_voice(self, data: bytes, seconds: float) -> None:
        self.fake.say("", self.fake.world.user, attachments=[(data, "audio/ogg", None)])

    def voices(self) -> list[float | None]:
        """The bot's voice notes: Signal's attachment keeps no duration."""
        return [None for m in self.fake.mine(self.fake.chat(self._person("user"))) if m.voice]

    def shown(self, *, who: Who = "user", where: Where = "dm") -> list[Shown]:
        chat = self.fake.chat(None if where == "group" else self._person(who))
        return [_shown(m) for m in self.fake.mine(chat)]

    async def wait_for(self, predicate: object, timeout: float = 15.0) -> None:
        assert callable(predicate)
        check: Callable[[], object] = predicate
        await self.fake.wait_for(lambda: check() or None, timeout)

    def flood_wait(self, seconds: float) -> None:
        self.fake.rate_limited.append(math.ceil(seconds))

    def sent_during_wait(self) -> int:
        return len(self.fake.violations)

    def flooded(self) -> bool:
        return not self.fake.rate_limited

    def refuse_next_send(self) -> None:
        # No proxy sits in front of a socket: the nearest fault is the daemon cutting the
        # call before it is carried out (it crashed), which the bot must take as in doubt.
        self.fake.cut_before += 1

    def in_doubt(self) -> None:
        self.fake.lose_answers += 1

    async def answer_approval(self, choice: Choice, *, who: Who = "user") -> None:
        question = self._question()
        assert question is not None, "no question is open"
        before = self.fake.delivered
        self.fake.react(self._person(who), EMOJI[choice], question.timestamp)
        await self.wait_for(lambda: self.fake.delivered > before)

    def asked(self) -> bool:
        return self._question() is not None

    def _question(self) -> Message | None:
        mine = self.fake.mine(self.fake.chat(self.fake.world.user))
        # A person sees the question once it is delivered, after the bot has its id.
        return next(
            (m for m in mine if CHOICES in m.text and m.timestamp in self.fake.answered), None
        )


def _shown(message: Message) -> Shown:
    styles = frozenset(STYLES[style] for _, _, style in message.styles if style in STYLES)
    return Shown(message.text, styles, image=bool(message.attachments))


class TestSignalContract(ContractSuite):
    @pytest.fixture
    def transport(self, fake: SignalCliFake) -> SignalContract:
        return SignalContract(fake)
