"""The seats of an in-process web adapter: one principal, the page's owner."""

from __future__ import annotations

from thalos_bot.channels.people import Seats
from thalos_bot.domain.ids import ConversationId
from thalos_bot.domain.people import People
from thalos_bot.domain.security import SecurityContext


def owner_seats(owner: ConversationId) -> Seats:
    """Only ``owner`` is served, and answers its questions."""
    return Seats(
        "web", People(), SecurityContext.of(owner), owner, prefixed=False, allowed=(owner,)
    )
