"""Conversation ids of the Signal channel: ``dm:<person>`` (the allowed user as listed,
number or account UUID, either of which signal-cli takes as a recipient, so that the
allowlist can judge a scheduled answer's address) and ``group:<group id>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from thalos_bot.domain.ids import ConversationId
from thalos_bot_signal.config import GROUP_ID, person_id

Kind = Literal["dm", "group"]


@dataclass(frozen=True, slots=True)
class Place:
    kind: Kind
    id: str

    @classmethod
    def parse(cls, conversation: str) -> Place:
        kind, _, rest = conversation.partition(":")
        if kind == "dm":
            try:
                return cls("dm", person_id(rest))
            except ValueError:
                pass
        if kind == "group" and GROUP_ID.match(rest):
            return cls("group", rest)
        raise ValueError(f"{conversation!r} is not a Signal conversation id")

    @property
    def conversation(self) -> ConversationId:
        return ConversationId(f"{self.kind}:{self.id}")

    def target(self) -> dict[str, object]:
        """The JSON-RPC parameters that address it."""
        if self.kind == "group":
            return {"groupId": self.id}
        return {"recipient": [self.id]}
