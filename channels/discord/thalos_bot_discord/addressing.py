"""Conversation ids of the Discord channel, and where they are written to.

``dm:<user>`` is a direct message with that user; ``ch:<channel>`` a listed server
channel; ``th:<parent>:<thread>`` a thread the bot opened under a listed channel. The
user and the parent are in the id so that the allowlist can judge a scheduled answer's
address without asking Discord.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from thalos_bot.domain.ids import ConversationId

Kind = Literal["dm", "ch", "th"]


@dataclass(frozen=True, slots=True)
class Place:
    kind: Kind
    id: int
    """The user (dm), the channel (ch) or the thread (th)."""
    parent: int | None = None
    """The listed channel a thread hangs off."""

    @classmethod
    def parse(cls, conversation: str) -> Place:
        kind, _, rest = conversation.partition(":")
        parts = rest.split(":")
        if kind in {"dm", "ch"} and len(parts) == 1 and parts[0].isdigit():
            return cls(kind, int(parts[0]))  # type: ignore[arg-type]
        if kind == "th" and len(parts) == 2 and all(p.isdigit() for p in parts):
            return cls("th", int(parts[1]), int(parts[0]))
        raise ValueError(f"{conversation!r} is not a Discord conversation id")

    @property
    def conversation(self) -> ConversationId:
        if self.kind == "th":
            return ConversationId(f"th:{self.parent}:{self.id}")
        return ConversationId(f"{self.kind}:{self.id}")
