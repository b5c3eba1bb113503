"""What a failed call to a chat platform means for what is done next.

A transport maps its client's exceptions onto :class:`Failure` (Telegram:
``thalos_bot_telegram.errors.classify``), and the kit's delivery machinery acts on the
kind alone. The question that matters most is whether the platform may have acted on
the call. A request that never left (connection refused, connect or pool timeout) is
:attr:`Failure.NOT_SENT` and is made again. One that may have arrived (a read timeout,
a connection dropped after the request was written, a 5xx answer, which a gateway can
give after the work was done) is :attr:`Failure.MAYBE_SENT`: an edit, being idempotent,
is simply made again, while a new message is first checked with the transport's "did
that send arrive?" probe (unless the platform's send is idempotent itself, as Matrix's
transaction ids and Discord's nonces are).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Failure(Enum):
    RETRY_AFTER = "retry_after"
    """Flood control: wait ``retry_after`` seconds before the next call to that chat."""
    NOT_SENT = "not_sent"
    """A transient failure before the request reached the platform: safe to repeat."""
    MAYBE_SENT = "maybe_sent"
    """A transient failure after the request may have reached the platform."""
    NOT_MODIFIED = "not_modified"
    """An edit that changes nothing: the message already shows this text (a success)."""
    BAD_ENTITIES = "bad_entities"
    """The platform could not parse the formatted text (or found it too long): send it
    plain."""
    GONE = "gone"
    """There is no message with that id (deleted, or never sent)."""
    NOT_EDITABLE = "not_editable"
    """The message exists but is not the bot's to edit (the user's own message, or one
    that is not text)."""
    CONFLICT = "conflict"
    """Another client receives with the same credentials."""
    UNAUTHORIZED = "unauthorized"
    """The credentials were rejected."""
    UNSUPPORTED = "unsupported"
    """This server does not know the method (e.g. an older self-hosted one)."""
    REJECTED = "rejected"
    """The platform refused the request for good (blocked by the user, chat not
    found, ...)."""


@dataclass(frozen=True, slots=True)
class Classified:
    failure: Failure
    reason: str
    """A short, secret-free description for logs (never for users)."""
    retry_after: float = 0.0
    everywhere: bool = False
    """The wait holds for every chat of the channel (a platform-wide limit: a Slack
    method's workspace tier), not only the one the call went to."""
