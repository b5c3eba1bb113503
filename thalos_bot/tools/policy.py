"""Role policies over qualified tool names, and the glob matching agents use too.

A policy says: tools matching this glob run only for a caller holding all these roles.
When several policies match a tool, the caller must satisfy every one of them. The
caller is always the turn's security context, never a tool argument.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from thalos_bot.config.tools import ToolPolicySettings
from thalos_bot.domain.security import SecurityContext


def matches_any(globs: Iterable[str], *names: str) -> bool:
    """True when any glob matches any of ``names`` (case-sensitive ``fnmatch``)."""
    return any(fnmatchcase(name, glob) for glob in globs for name in names)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    tool: str
    require_roles: frozenset[str]


class PolicySet:
    """The configured policies, asked by tool name."""

    def __init__(self, policies: Iterable[ToolPolicy] = ()) -> None:
        self._policies: tuple[ToolPolicy, ...] = tuple(policies)

    @classmethod
    def from_settings(cls, settings: Sequence[ToolPolicySettings]) -> PolicySet:
        return cls(ToolPolicy(p.tool, frozenset(p.require_roles)) for p in settings)

    def required_roles(self, *names: str) -> frozenset[str]:
        """Every role a caller needs for the tool known by ``names`` (its exposed name and
        its natural ``server__tool`` form): a policy matching either applies."""
        roles: set[str] = set()
        for policy in self._policies:
            if matches_any((policy.tool,), *names):
                roles |= policy.require_roles
        return frozenset(roles)

    def missing_roles(self, caller: SecurityContext, *names: str) -> frozenset[str]:
        """The required roles ``caller`` does not hold; empty when the call is permitted."""
        return self.required_roles(*names) - caller.roles

    def __len__(self) -> int:
        return len(self._policies)
