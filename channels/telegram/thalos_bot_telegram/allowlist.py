"""Whom the bot may still write to unasked, by ``[channels.telegram]`` as it stands now
(the kit's :class:`~thalos_bot.channels.admission.allowlist.Allowlist`, keyed by
Telegram ids). A private chat's id is its user's id; a forum topic
(``"<chat>:<thread>"``) belongs to its group.
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.channels.admission.allowlist import Allowlist
from thalos_bot.domain.address import Address
from thalos_bot_telegram.addressing import Address as ChatAddress
from thalos_bot_telegram.config import TelegramConfig


@dataclass(frozen=True, slots=True)
class TelegramAllowlist:
    allowed: Allowlist[int]

    @classmethod
    def of(cls, config: TelegramConfig) -> TelegramAllowlist:
        users, groups = frozenset(config.allowed_user_ids), frozenset(config.groups)
        return cls(Allowlist(users, groups, users_key="allowed_user_ids"))

    def refusal(self, address: Address) -> str | None:
        try:
            chat = ChatAddress.parse(address.conversation_id)
        except ValueError:
            return f"{address.conversation_id!r} is not a Telegram chat id"
        if chat.private:
            return self.allowed.user_refusal(chat.chat_id)
        return self.allowed.group_refusal(chat.chat_id)
