"""Telegram passes the channel kit's contract suite over the Bot API fake."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.channels.contract.suite import ContractSuite
from tests.channels.contract.transport import Choice, Shown, Style, Where, Who
from tests.fakes.telegram_api import StoredMessage, TelegramFake
from tests.fakes.telegram_groups import push_group_text
from tests.telegram.harness import STRANGER, USER, make_config
from thalos_bot.channels.registry import ChannelPlugin
from thalos_bot_telegram import TOKEN_ENV
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.limits import MAX_UNITS
from thalos_bot_telegram.manifest import manifest as plugin

GROUP = -1001234567890
BOT = "@thalos_test_bot"
_STYLES: dict[str, Style] = {
    "bold": "bold",
    "italic": "italic",
    "strikethrough": "strike",
    "code": "code",
    "pre": "pre",
    "text_link": "link",
}
_LABELS: dict[Choice, str] = {
    "once": "Approve",
    "session": "Approve for this session",
    "deny": "Deny",
}


class TelegramContract:
    """The contract's fixture object over the Telegram fake."""

    plugin: ChannelPlugin = plugin
    message_limit = MAX_UNITS

    def __init__(self, fake: TelegramFake) -> None:
        self.fake = fake
        fake.add_chat(GROUP, "supergroup")

    def config(self) -> TelegramConfig:
        return make_config(self.fake, groups=[GROUP])

    def environment(self) -> dict[str, str]:
        return {TOKEN_ENV: self.fake.token}

    async def started(self) -> None:
        await self.wait_for(lambda: self.fake.polling)

    async def say(
        self, text: str, *, who: Who = "user", where: Where = "dm", mention: bool = False
    ) -> None:
        user = USER if who == "user" else STRANGER
        if where == "group":
            push_group_text(self.fake, GROUP, user, f"{BOT} {text}" if mention else text)
        else:
            self.fake.push_text(user, user, text)

    async def send_image(self, data: bytes, caption: str, *, who: Who = "user") -> None:
        user = USER if who == "user" else STRANGER
        self.fake.push_photo(user, user, data, caption=caption)

    async def send_voice(self, data: bytes, seconds: float) -> None:
        self.fake.push_voice(USER, USER, data)

    def voices(self) -> list[float | None]:
        return [
            float(m.payload["voice"]["duration"])
            for m in self.fake.messages(USER)
            if m.kind == "voice"
        ]

    def shown(self, *, who: Who = "user", where: Where = "dm") -> list[Shown]:
        chat = GROUP if where == "group" else USER if who == "user" else STRANGER
        return [_shown(message) for message in self.fake.messages(chat)]

    async def wait_for(self, predicate: object, timeout: float = 15.0) -> None:
        assert callable(predicate)
        check: Callable[[], object] = predicate
        found = await self.fake.wait_for(lambda: check() or None, timeout)
        assert found is not None, "the bot did not get there in time"

    def flood_wait(self, seconds: float) -> None:
        self.fake.fail_next("sendMessage", 429, retry_after=max(1, round(seconds)))

    def sent_during_wait(self) -> int:
        return len(self.fake.retry_after_violations)

    def flooded(self) -> bool:
        return not self.fake.fault_waiting("sendMessage")

    def refuse_next_send(self) -> None:
        self.fake.fail_next("sendMessage", 502, description="Bad Gateway")

    def in_doubt(self) -> None:
        self.fake.timeout_next("sendMessage")

    async def answer_approval(self, choice: Choice, *, who: Who = "user") -> None:
        question = self._question()
        assert question is not None, "no question is open"
        markup = question.current.reply_markup or {}
        data = {b["text"]: b["callback_data"] for row in markup["inline_keyboard"] for b in row}
        user = USER if who == "user" else STRANGER
        _, query = self.fake.press_button(USER, user, question.message_id, data[_LABELS[choice]])
        await self.wait_for(lambda: self.fake.callback_answer(query) is not None)

    def asked(self) -> bool:
        return self._question() is not None

    def _question(self) -> StoredMessage | None:
        return next((m for m in self.fake.messages(USER) if m.current.reply_markup), None)


def _shown(message: StoredMessage) -> Shown:
    styles = frozenset(
        _STYLES[str(entity["type"])] for entity in message.entities if entity["type"] in _STYLES
    )
    return Shown(message.text, styles, image=message.kind == "photo")


class TestTelegramContract(ContractSuite):
    @pytest.fixture
    def transport(self, fake: TelegramFake) -> TelegramContract:
        return TelegramContract(fake)
