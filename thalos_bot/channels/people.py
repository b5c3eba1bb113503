"""Whom a transport's senders run as: the person each is (see
:mod:`thalos_bot.domain.people`), looked up by their id on the platform."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from thalos_bot.channels.ports import Sender
from thalos_bot.channels.settings import ChannelSettings
from thalos_bot.domain.people import People, stranger_id
from thalos_bot.domain.security import SecurityContext


@dataclass(frozen=True, slots=True)
class Seats:
    """One transport's senders as people. A sender a person lists runs as that person;
    else ``first`` (the transport's first allowed user) keeps ``channel``, the section's
    ``principal_id`` and roles; anyone else is a person of their own with no roles,
    ``<transport>:<id>`` (or their id alone where ids are already principals: the web
    page's logins)."""

    transport: str
    people: People
    channel: SecurityContext
    first: str | None
    prefixed: bool = True
    allowed: tuple[str, ...] = ()
    """The transport's allowed users' platform ids, the first first (who may answer its
    questions)."""

    def context(self, user: str | int) -> SecurityContext:
        """Whom a message from ``user`` (their platform id) runs as."""
        user = str(user)
        person = self.people.of(self.transport, user)
        if person is not None:
            return person.context
        if self.first is not None and user == self.first:
            return self.channel
        return SecurityContext.of(stranger_id(self.transport, user) if self.prefixed else user)

    def sender(self, user: str | int, display: str = "") -> Sender:
        """The :class:`Sender` of a message from ``user`` (their platform id)."""
        return Sender(self.context(user), display, str(user))


def section_seats(transport: str, config: BaseModel, people: People) -> Seats | None:
    """Whom a section's senders run as: a transport's allowlist (its ``principal_id``
    for the first allowed user), or the web page's logins (each login its own principal,
    the first with ``roles``); None for a section with neither (the terminal)."""
    roles = [str(role) for role in getattr(config, "roles", [])]
    if isinstance(config, ChannelSettings):
        ids, principal, prefixed = config.allowed_ids(), config.principal_id, True
    else:
        logins = getattr(config, "principals", None)
        if not isinstance(logins, list) or not logins:
            return None
        ids, prefixed = [str(login) for login in logins], False
        principal = ids[0]
    channel = SecurityContext.of(principal, roles)
    first = ids[0] if ids else None
    return Seats(transport, people, channel, first, prefixed, tuple(ids))
