"""People: who the bot's users are, across the places they talk to it.

Each person named in ``[[people]]`` has an id (the principal their memories, sessions,
schedules and spend are kept under), a display name, roles, and identities: a sender's
own id on a transport (``telegram`` ``4242``, ``matrix`` ``@ana:example.org``, a web
login, the terminal). A message is attributed to the person whose identity sent it.

A sender no person lists is never someone else. On a transport whose section names a
``principal_id``, the first of its allowed users keeps that principal and its roles
(so an existing deployment's owner keeps every memory, session and schedule stored
under it); every other allowed sender is a person of their own, ``<transport>:<id>``,
with no roles.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from thalos_bot.domain.security import SecurityContext

TERMINAL = "console"
"""The terminal's transport name (``thalos-bot chat``); its one identity is itself."""
Identity = tuple[str, str]
"""A transport's name and the sender's id there, as text."""


@dataclass(frozen=True, slots=True)
class Budget:
    """A person's limits, in place of ``[limits]``' (None: the default's)."""

    daily_tokens: int | None = None
    daily_cost_usd: float | None = None
    monthly_tokens: int | None = None
    monthly_cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class Person:
    id: str
    name: str
    roles: tuple[str, ...] = ()
    identities: tuple[Identity, ...] = ()
    budget: Budget = Budget()

    @property
    def context(self) -> SecurityContext:
        return SecurityContext.of(self.id, self.roles)


ADMIN = "admin"
"""The role that sees everyone's spending, lifts a person's limits for the day
(``/budget lift``) and is told when someone reaches a limit."""


def stranger_id(transport: str, user: str) -> str:
    """The principal of an allowed sender no person lists: ``<transport>:<id>``."""
    return f"{transport}:{user}"


class People:
    """Every listed person, found by id or by identity."""

    def __init__(self, people: Iterable[Person] = ()) -> None:
        self.listed = tuple(people)
        self._by_id = {person.id: person for person in self.listed}
        self._by_identity: Mapping[Identity, Person] = {
            identity: person for person in self.listed for identity in person.identities
        }

    def __len__(self) -> int:
        return len(self.listed)

    def get(self, person_id: str) -> Person | None:
        return self._by_id.get(person_id)

    def budgets(self) -> dict[str, Budget]:
        """The people whose limits (daily or monthly) are their own."""
        return {p.id: p.budget for p in self.listed if p.budget != Budget()}

    def of(self, transport: str, user: str) -> Person | None:
        """The person who owns this identity, if one is listed."""
        return self._by_identity.get((transport, user))


class RoleBook:
    """Each principal's roles as the configuration says now, for runs made earlier (a
    schedule keeps the roles it was made with; it runs with these instead).

    ``granted``: each principal the configuration names with roles (a transport's
    ``principal_id``, a webhook's ``principal``), and those roles; a principal named
    several times holds only the roles they all give it. ``known``: the others it names
    (a person of their own, ``<transport>:<id>``, for each allowed user; the web page's
    other logins), with no roles. Anyone else is no longer anyone: :meth:`roles` says
    None."""

    def __init__(
        self,
        people: People,
        granted: Iterable[tuple[str, Iterable[str]]],
        known: Iterable[str] = (),
    ) -> None:
        self._people = people
        self._roles: dict[str, frozenset[str]] = {}
        for principal, roles in granted:
            given = frozenset(roles)
            held = self._roles.get(principal)
            self._roles[principal] = given if held is None else held & given
        for principal in known:
            self._roles.setdefault(principal, frozenset())

    def holding(self, role: str) -> list[str]:
        """Every principal holding ``role`` (the people listed, then the sections')."""
        listed = [p.id for p in self._people.listed if role in p.roles]
        others = [
            principal
            for principal, roles in self._roles.items()
            if role in roles and self._people.get(principal) is None
        ]
        return listed + sorted(others)

    def roles(self, principal: str) -> frozenset[str] | None:
        person = self._people.get(principal)
        if person is not None:
            return frozenset(person.roles)
        return self._roles.get(principal)
