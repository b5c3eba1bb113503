"""Whom the bot may still write to unasked, by ``[channels.matrix]`` as it stands now.

A scheduled answer goes to the room the schedule was made in: a listed room while it is
still listed; a direct room only while its person is still allowed. A direct room's id
says nothing of its person, so the check is by the room alone: a room not in ``rooms``
is a direct room, allowed while anyone at all is allowed (the channel only ever joined
it on an allowed user's invite).
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.domain.address import Address
from thalos_bot_matrix.config import ROOM_ID, MatrixConfig


@dataclass(frozen=True, slots=True)
class MatrixAllowlist:
    allowed_users: frozenset[str]
    rooms: frozenset[str]

    @classmethod
    def of(cls, config: MatrixConfig) -> MatrixAllowlist:
        return cls(frozenset(config.allowed_users), frozenset(config.rooms))

    def refusal(self, address: Address) -> str | None:
        room = address.conversation_id
        if not ROOM_ID.match(room):
            return f"{room!r} is not a Matrix room id"
        if not self.allowed_users:
            return "allowed_users is empty"
        return None
