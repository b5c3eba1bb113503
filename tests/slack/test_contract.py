"""The kit's contract suite over the Slack fake (see tests/channels/contract/)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.channels.contract.suite import ContractSuite
from tests.channels.contract.transport import Choice, Shown, Style, Where, Who
from tests.fakes.slack_api import SlackFake
from tests.fakes.slack_state import Message
from tests.slack.harness import CHANNEL, STRANGER, USER, make_config
from thalos_bot.channels.registry import ChannelPlugin
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.config import SlackConfig
from thalos_bot_slack.manifest import manifest as plugin
from thalos_bot_slack.wire import TEXT_PART

ACTIONS: dict[Choice, str] = {
    "once": "thalos_approve",
    "session": "thalos_approve_session",
    "deny": "thalos_deny",
}
_LINK = re.compile(r"<(https?://[^|>]+)\|([^>]+)>")
_MARKS: list[tuple[Style, re.Pattern[str]]] = [
    ("pre", re.compile(r"```\n?(.*?)\n?```", re.DOTALL)),
    ("code", re.compile(r"`([^`]+)`")),
    ("bold", re.compile(r"(?<!\w)\*([^*\n]+)\*(?!\w)")),
    ("italic", re.compile(r"(?<!\w)_([^_\n]+)_(?!\w)")),
    ("strike", re.compile(r"(?<!\w)~([^~\n]+)~(?!\w)")),
]


def read_mrkdwn(text: str) -> tuple[str, frozenset[Style]]:
    """What a person sees of a mrkdwn text, and the formatting it shows."""
    styles: set[Style] = set()
    if _LINK.search(text):
        styles.add("link")
        text = _LINK.sub(r"\2", text)
    for style, pattern in _MARKS:
        if pattern.search(text):
            styles.add(style)
            text = pattern.sub(r"\1", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return text, frozenset(styles)


class SlackContract:
    plugin: ChannelPlugin = plugin
    message_limit = TEXT_PART

    def __init__(self, fake: SlackFake) -> None:
        self.fake = fake
        self._connections = 0

    def environment(self) -> dict[str, str]:
        return {APP_TOKEN_ENV: self.fake.app_token, BOT_TOKEN_ENV: self.fake.bot_token}

    def config(self) -> SlackConfig:
        return make_config(self.fake, streaming="edit")

    async def started(self) -> None:
        before = self._connections
        await self.fake.wait_for(lambda: self.fake.socket.connections > before)
        self._connections = self.fake.socket.connections

    def _where(self, who: Who, where: Where) -> str:
        if where == "group":
            return CHANNEL
        return self.fake.dm(USER if who == "user" else STRANGER)

    async def say(
        self, text: str, *, who: Who = "user", where: Where = "dm", mention: bool = False
    ) -> None:
        user = USER if who == "user" else STRANGER
        if mention:
            text = f"<@{self.fake.workspace.bot_user}> {text}"
        self.fake.say(user, text, channel=CHANNEL if where == "group" else None)

    async def send_image(self, data: bytes, caption: str, *, who: Who = "user") -> None:
        user = USER if who == "user" else STRANGER
        self.fake.say(user, caption, files=[("image.png", "image/png", data)])

    async def send_voice(self, data: bytes, seconds: float) -> None:
        self.fake.say(USER, "", files=[("audio_message.ogg", "audio/ogg", data)])

    def voices(self) -> list[float | None]:
        files = self.fake.workspace.files
        return [
            None
            for message in self.fake.messages(self._where("user", "dm"))
            for file in message.files
            if file in files and files[file].name.endswith(".ogg")
        ]

    def shown(self, *, who: Who = "user", where: Where = "dm") -> list[Shown]:
        out: list[Shown] = []
        for message in self.fake.messages(self._where(who, where)):
            text, styles = read_mrkdwn(message.shown)
            out.append(Shown(text, styles, image=bool(message.files)))
        return out

    async def wait_for(self, predicate: object, timeout: float = 15.0) -> None:
        assert callable(predicate)
        check: Callable[[], Any] = predicate
        await self.fake.wait_for(lambda: check() or None, timeout)

    def flood_wait(self, seconds: float) -> None:
        self.fake.rate_limit_next(
            "chat.postMessage", math.ceil(seconds), channel=self.fake.dm(USER)
        )

    def sent_during_wait(self) -> int:
        return len(self.fake.limits.violations)

    def flooded(self) -> bool:
        return "chat.postMessage" in self.fake.limits.limited

    def refuse_next_send(self) -> None:
        self.fake.drop_request("chat.postMessage")

    def in_doubt(self) -> None:
        self.fake.lose_answer("chat.postMessage")

    def _question(self) -> Message | None:
        for message in self.fake.messages(self.fake.dm(USER)):
            if any(block.get("type") == "actions" for block in message.blocks):
                return message
        return None

    def asked(self) -> bool:
        return self._question() is not None

    async def answer_approval(self, choice: Choice, *, who: Who = "user") -> None:
        question = self._question()
        assert question is not None, "no open question"
        user = USER if who == "user" else STRANGER
        envelope = self.fake.press(user, self.fake.dm(USER), question.ts, ACTIONS[choice])
        await self.fake.wait_for(lambda: envelope.acked)


class TestSlackContract(ContractSuite):
    @pytest.fixture
    def transport(self, fake: SlackFake) -> SlackContract:
        return SlackContract(fake)
