"""Linking: a person proves an identity on another transport from the chat itself.

``/link`` in one chat answers with a code (:data:`CODE_LIFETIME`, one use). ``/link
<code>`` sent from another chat makes that chat's sender the same person: every later
message of theirs runs as the code's principal, with the roles the configuration gives
that principal now. ``/unlink`` there undoes it. Only senders a transport let in reach
the pump, so a stranger can never link. An identity ``[[people]]`` lists stays the
person the file says (a link cannot take it). Links and unlinks are logged and kept
(see :mod:`thalos_bot.storage.links`). Once linked, the account's messages go to the
person's own session in that conversation (:mod:`thalos_bot.pump.slots`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import structlog

from thalos_bot.channels.ports import InboundMessage, Notice
from thalos_bot.domain.codes import new_code, shown
from thalos_bot.domain.people import People
from thalos_bot.domain.security import SecurityContext
from thalos_bot.storage.links import PeopleLinks

log = structlog.get_logger(__name__)

CODE_LIFETIME = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class Linking:
    links: PeopleLinks
    people: People
    roles: Callable[[str], frozenset[str] | None]
    """A principal's roles now (the configuration's; None: no longer anyone)."""
    clock: Callable[[], datetime]

    async def attributed(self, message: InboundMessage) -> InboundMessage:
        """``message`` as its linked person's, when its sender's identity is linked."""
        sender = message.sender
        if not sender.user or self.people.of(message.channel_id, sender.user) is not None:
            return message
        principal = await self.links.principal(message.channel_id, sender.user)
        if principal is None or principal == sender.context.id:
            return message
        roles = self.roles(principal)
        context = SecurityContext.of(principal, roles or ())
        return replace(message, sender=replace(sender, context=context))

    async def link(self, argument: str, message: InboundMessage) -> Notice:
        """``/link`` (give a code) or ``/link <code>`` (use one here)."""
        principal = message.sender.context.id
        if not argument.strip():
            code = shown(new_code())  # eight characters in two groups, e.g. 7KQ2-9XF4
            await self.links.issue(principal, code, self.clock() + CODE_LIFETIME)
            log.info("link_code_issued", principal=principal, channel=message.channel_id)
            return Notice(
                f"Your link code is {code}. Within 10 minutes, send /link {code} from your "
                "other chat (another app, the web page or the terminal) to be the same "
                "person there. It works once."
            )
        user = message.sender.user
        listed = self.people.of(message.channel_id, user) if user else None
        if not user or listed is not None:
            who = f"as {listed.id!r} " if listed is not None else ""
            return Notice(
                f"This account is listed {who}in the bot's configuration ([[people]]); "
                "change it there.",
                "warning",
            )
        claimed = await self.links.claim(argument.strip(), message.channel_id, user, self.clock())
        if claimed is None:
            log.info("link_code_refused", channel=message.channel_id)
            return Notice("That link code is unknown, used or expired.", "warning")
        log.info("person_linked", channel=message.channel_id, user=user, principal=claimed)
        return Notice(
            f"Linked: here you are now {claimed!r}, with their memories and schedules. "
            "/unlink undoes it."
        )

    async def unlink(self, message: InboundMessage) -> Notice:
        user = message.sender.user
        ended = await self.links.unlink(message.channel_id, user, self.clock()) if user else None
        if ended is None:
            return Notice("This account is not linked to anyone.")
        log.info("person_unlinked", channel=message.channel_id, user=user, principal=ended)
        return Notice(f"Unlinked: here you are no longer {ended!r}.")
