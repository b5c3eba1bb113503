"""Where a detached result goes: a channel and a conversation in it.

A scheduled run remembers the conversation it was created in and answers there. The
text form is what ``bot.toml`` and the schedules table hold: ``telegram:<chat id>`` or
``console`` (the terminal's one conversation).
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.domain.ids import ChannelId, ConversationId

CONSOLE = "console"


@dataclass(frozen=True, slots=True)
class Address:
    channel_id: ChannelId
    conversation_id: ConversationId

    @classmethod
    def parse(cls, text: str) -> Address:
        """``telegram:123`` or ``console``; a ``ValueError`` saying why for anything else."""
        body = text.strip()
        if body == CONSOLE:
            return cls(ChannelId(CONSOLE), ConversationId(CONSOLE))
        channel, sep, conversation = body.partition(":")
        if not sep or not channel or not conversation or ":" in conversation:
            raise ValueError(
                f"{text!r} is not a delivery address; write telegram:<chat id> or console"
            )
        if channel == "telegram" and not conversation.lstrip("-").isdigit():
            raise ValueError(f"{text!r}: a Telegram chat id is a number, e.g. telegram:123456")
        return cls(ChannelId(channel), ConversationId(conversation))

    def __str__(self) -> str:
        if self.channel_id == CONSOLE and self.conversation_id == CONSOLE:
            return CONSOLE
        return f"{self.channel_id}:{self.conversation_id}"
