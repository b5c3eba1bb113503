"""The security context a turn runs under.

Channels attribute every accepted sender to one configured context; nothing taken from a
tool argument or from the transport (a Telegram user id, a username) ever stands in for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class SecurityContext:
    id: str
    roles: frozenset[str] = frozenset()
    claims: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def of(cls, principal: str, roles: Iterable[str] = (), **claims: str) -> SecurityContext:
        return cls(principal, frozenset(roles), MappingProxyType(dict(claims)))

    @property
    def anonymous(self) -> bool:
        return not self.id

    def has_roles(self, required: Iterable[str]) -> bool:
        return set(required) <= self.roles
