"""Role policies and actions over qualified tool names, and the glob matching agents use too.

A policy says: tools matching this glob run only for a caller holding all these roles
(``require_roles``), and only as its ``action`` says (``allow``, ``deny``, or ``ask`` a
person first).

* **Roles add up.** When several policies match a tool, the caller must hold the roles of
  every one of them. The caller is always the turn's security context, never a tool
  argument.
* **The most specific action wins.** Of the matching policies that give an ``action``,
  the one whose glob is most specific decides; with none, the tool is allowed. A glob is
  more specific when it has fewer wildcards (each ``*``, ``?`` and ``[...]`` counts one),
  then when it has more literal characters, then when its literal prefix (up to the first
  wildcard) is longer. Two equally specific globs with different actions: the stricter
  action wins (deny, then ask, then allow), whatever their order in the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from thalos_bot.config.tools import ToolPolicySettings
from thalos_bot.domain.security import SecurityContext

Action = Literal["allow", "deny", "ask"]
_STRICTNESS: dict[Action, int] = {"allow": 0, "ask": 1, "deny": 2}


def matches_any(globs: Iterable[str], *names: str) -> bool:
    """True when any glob matches any of ``names`` (case-sensitive ``fnmatch``)."""
    return any(fnmatchcase(name, glob) for glob in globs for name in names)


def specificity(glob: str) -> tuple[int, int, int]:
    """A sort key: larger is more specific (see the module docstring for the order)."""
    wildcards = literals = 0
    prefix: int | None = None
    index = 0
    while index < len(glob):
        char = glob[index]
        if char in "*?":
            wildcards += 1
            prefix = literals if prefix is None else prefix
        elif char == "[" and (close := glob.find("]", index + 2)) != -1:
            wildcards += 1
            prefix = literals if prefix is None else prefix
            index = close
        else:
            literals += 1
        index += 1
    return (-wildcards, literals, literals if prefix is None else prefix)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    tool: str
    require_roles: frozenset[str] = frozenset()
    action: Action | None = None


class PolicySet:
    """The configured policies, asked by tool name."""

    def __init__(self, policies: Iterable[ToolPolicy] = ()) -> None:
        self._policies: tuple[ToolPolicy, ...] = tuple(policies)

    @classmethod
    def from_settings(cls, settings: Sequence[ToolPolicySettings]) -> PolicySet:
        return cls(ToolPolicy(p.tool, frozenset(p.require_roles), p.action) for p in settings)

    def _matching(self, names: Sequence[str]) -> list[ToolPolicy]:
        return [p for p in self._policies if matches_any((p.tool,), *names)]

    def required_roles(self, *names: str) -> frozenset[str]:
        """Every role a caller needs for the tool known by ``names`` (its exposed name and
        its natural ``server__tool`` form): a policy matching either applies."""
        roles: set[str] = set()
        for policy in self._matching(names):
            roles |= policy.require_roles
        return frozenset(roles)

    def missing_roles(self, caller: SecurityContext, *names: str) -> frozenset[str]:
        """The required roles ``caller`` does not hold; empty when the call is permitted."""
        return self.required_roles(*names) - caller.roles

    def action(self, *names: str) -> Action:
        """What the most specific matching policy with an action says; ``allow`` if none."""
        ranked = [p for p in self._matching(names) if p.action is not None]
        if not ranked:
            return "allow"
        best = max(
            ranked,
            key=lambda p: (specificity(p.tool), _STRICTNESS[p.action or "allow"]),
        )
        return best.action or "allow"

    def __len__(self) -> int:
        return len(self._policies)
