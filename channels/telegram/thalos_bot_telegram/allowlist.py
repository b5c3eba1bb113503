"""Whom the bot may still write to unasked, by ``[channels.telegram]`` as it stands now.

A scheduled answer goes to the chat the schedule was made in. If that person has since
been removed from ``allowed_user_ids``, or the group from ``groups``, the bot no longer
talks there: it ignores what they send, so it must not write to them either. A private
chat's id is its user's id; a forum topic (``"<chat>:<thread>"``) belongs to its group.
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.domain.address import Address
from thalos_bot_telegram.addressing import Address as ChatAddress
from thalos_bot_telegram.config import TelegramConfig


@dataclass(frozen=True, slots=True)
class TelegramAllowlist:
    allowed_user_ids: frozenset[int]
    groups: frozenset[int]

    @classmethod
    def of(cls, config: TelegramConfig) -> TelegramAllowlist:
        return cls(frozenset(config.allowed_user_ids), frozenset(config.groups))

    def refusal(self, address: Address) -> str | None:
        try:
            chat = ChatAddress.parse(address.conversation_id)
        except ValueError:
            return f"{address.conversation_id!r} is not a Telegram chat id"
        if chat.private:
            if chat.chat_id in self.allowed_user_ids:
                return None
            return f"user {chat.chat_id} is not in allowed_user_ids"
        if chat.chat_id in self.groups:
            return None
        return f"group {chat.chat_id} is not in groups"
