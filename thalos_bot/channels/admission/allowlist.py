"""Allowlists: who a transport serves, and where the bot may write unasked.

A transport keeps two sets from its config: the users it serves (in private chats, and
in groups as the only senders heard) and the groups (rooms) it serves at all. A sender
not allowed is dropped without a word (a reply would tell a prober the bot exists).
The same sets answer the scheduler's question (:class:`~thalos_bot.channels.ports.
DeliveryAllowlist`): a scheduled answer goes to the chat the schedule was made in, and
if that person has since been removed, or the group, the bot no longer writes there.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from thalos_bot.domain.address import Address

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Seat(Generic[K]):
    """Where a conversation is, as an allowlist judges it: in a group (a channel, a
    room), or a private chat with a person (None when its id does not say whose)."""

    group: K | None = None
    user: K | None = None
    direct_unless_listed: bool = False
    """A group id that, when not listed, is a private chat whose id does not say whose
    (Matrix: a room not in ``rooms`` is a direct room)."""


def _nowhere(conversation_id: str) -> Seat[K]:
    raise ValueError(conversation_id)


@dataclass(frozen=True, slots=True)
class Allowlist(Generic[K]):
    users: frozenset[K]
    groups: frozenset[K] = frozenset()
    users_key: str = "allowed_users"
    """The config key that lists the users (named in refusals)."""
    groups_key: str = "groups"
    group_word: str = "group"
    """What the transport calls a group (a channel, a room), in refusals."""
    locate: Callable[[str], Seat[K]] = _nowhere
    """The transport's reading of a conversation id (ValueError: none of its own)."""
    transport: str = ""

    def allows_user(self, user: K) -> bool:
        return user in self.users

    def allows_group(self, group: K) -> bool:
        return group in self.groups

    def user_refusal(self, user: K) -> str | None:
        """None when ``user`` may be written to in private; otherwise why not."""
        return None if user in self.users else f"user {user} is not in {self.users_key}"

    def group_refusal(self, group: K) -> str | None:
        """None when ``group`` may be written to; otherwise why not."""
        if group in self.groups:
            return None
        return f"{self.group_word} {group} is not in {self.groups_key}"

    def refusal(self, address: Address) -> str | None:
        """The :class:`~thalos_bot.channels.ports.DeliveryAllowlist` port: may the bot
        still write to ``address`` unasked, by the config as it stands now? A private
        chat whose id does not say whose it is may be written to while anyone is
        allowed (the bot only ever answered allowed people there)."""
        try:
            seat = self.locate(address.conversation_id)
        except ValueError:
            return f"{address.conversation_id!r} is not a {self.transport} conversation id"
        if seat.group is not None and not (
            seat.direct_unless_listed and seat.group not in self.groups
        ):
            return self.group_refusal(seat.group)
        if seat.user is not None:
            return self.user_refusal(seat.user)
        return None if self.users else f"{self.users_key} is empty"
