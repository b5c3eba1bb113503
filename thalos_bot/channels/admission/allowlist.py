"""Allowlists: who a transport serves, and where the bot may write unasked.

A transport keeps two sets from its config: the users it serves (in private chats, and
in groups as the only senders heard) and the groups (rooms) it serves at all. A sender
not allowed is dropped without a word (a reply would tell a prober the bot exists).
The same sets answer the scheduler's question (:class:`~thalos_bot.channels.ports.
DeliveryAllowlist`): a scheduled answer goes to the chat the schedule was made in, and
if that person has since been removed, or the group, the bot no longer writes there.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Allowlist(Generic[K]):
    users: frozenset[K]
    groups: frozenset[K] = frozenset()
    users_key: str = "allowed_users"
    """The config key that lists the users (named in refusals)."""
    groups_key: str = "groups"

    def allows_user(self, user: K) -> bool:
        return user in self.users

    def allows_group(self, group: K) -> bool:
        return group in self.groups

    def user_refusal(self, user: K) -> str | None:
        """None when ``user`` may be written to in private; otherwise why not."""
        return None if user in self.users else f"user {user} is not in {self.users_key}"

    def group_refusal(self, group: K) -> str | None:
        """None when ``group`` may be written to; otherwise why not."""
        return None if group in self.groups else f"group {group} is not in {self.groups_key}"
