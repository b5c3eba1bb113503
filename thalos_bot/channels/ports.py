"""The channel ports: inbound messages, sources, adapters.

Data flows one way: a :class:`ChannelSource` yields :class:`InboundMessage`; the pump
turns them into turns; a :class:`ChannelAdapter` renders what comes back. A source never
talks to an adapter, and an adapter never asks the runtime anything.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

import anyio

from thalos_bot.domain.address import Address
from thalos_bot.domain.attachments import Inbound
from thalos_bot.domain.events import AgentEvent, ToolCallFinished, ToolCallStarted, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext


@dataclass(frozen=True, slots=True)
class Sender:
    """Who sent a message. ``context`` is the security context the channel attributed
    the sender to (their person, see :class:`~thalos_bot.channels.people.Seats`);
    ``display`` is for logs and greetings only; ``user`` is their id on the platform."""

    context: SecurityContext
    display: str = ""
    user: str = ""


@dataclass(frozen=True, slots=True)
class Quoted:
    """The message a message replies to, as the model should read it ahead of the
    user's words. The channel caps ``text`` (``cut`` says it did)."""

    text: str
    author: Literal["assistant", "user", "other"]
    """Whose message it was: the bot's own answer, the user's, or someone else's."""
    partial: bool = False
    """Only part of the message was quoted (Telegram's ``quote``)."""
    cut: bool = False

    @classmethod
    def capped(cls, text: str, limit: int, *, bots: bool, senders: bool) -> Quoted | None:
        """``text`` cut to ``limit`` characters, written by the bot (``bots``), by the
        sender (``senders``) or by someone else; None when quoting is off (``limit`` 0)
        or there is no text."""
        if limit <= 0 or not text.strip():
            return None
        author: Literal["assistant", "user", "other"] = (
            "assistant" if bots else "user" if senders else "other"
        )
        return cls(text[:limit], author, cut=len(text) > limit)


@dataclass(frozen=True, slots=True)
class InboundMessage:
    channel_id: ChannelId
    conversation_id: ConversationId
    sender: Sender
    text: str
    received_at: datetime
    handled: anyio.Event | None = field(default=None, compare=False, repr=False)
    """Set by the pump once the message is fully dealt with (its command answered, or its
    turn's final event delivered), or by the intake when it refused the message (its
    notice sent). A source that reads strictly in order (piped stdin) waits on it before
    reading the next message."""
    attachments: tuple[Inbound, ...] = ()
    """Images, files and re-attached media sent with ``text`` (which may then be empty)."""
    reply_to: Quoted | None = None
    """The message this one replies to, if any."""
    message_ref: str | None = None
    """The channel's own id of this message, opaque to the core; handed back on the
    :class:`TurnStarted` of the turn that answers it (so a group reply can quote it)."""
    voice: bool = False
    """It was spoken: a voice note (or an audio clip), transcribed (see
    :mod:`thalos_bot.pump.speaking`)."""
    redelivered: bool = False
    """The source hands this message over again (to the next process, or to another
    replica) if no turn starts for it. One that arrives while the pump is stopping is then
    left unanswered instead of refused with "ask again": it is answered after the restart."""
    replayed_if_cut: bool = False
    """The source hands this message over again at the next start if its turn was cut
    before its answer was kept (email: the cursor stays below a mail until then). A turn
    a kill cut short is then simply run again, not announced as interrupted (see
    :mod:`thalos_bot.storage.turn_journal`)."""
    owner_only: bool = False
    """Only the process holding the platform connection can answer it (Matrix: a message
    from an encrypted room, whose answer only the device's current key holder can
    encrypt). On replicas its turn runs on the connection's owner (see
    :mod:`thalos_bot.cluster.seen_lanes`); in one process it changes nothing."""


@dataclass(frozen=True, slots=True)
class Notice:
    """A short text the pump says to a conversation (busy, refused command, help, ...).

    ``tone`` lets an adapter style it; the text itself comes from the notices module.
    """

    text: str
    tone: Literal["info", "warning", "error"] = "info"
    kind: Literal["notice"] = "notice"
    command: bool = False
    """A command's reply: it may go before the files (tool images, the answer read
    aloud) of an answer whose text is out, never before an answer's text."""


@dataclass(frozen=True, slots=True)
class TextUpdate:
    """One flush for one conversation: the text streamed since the last flush, and the
    tool activity since then (when tool status lines are on)."""

    text: str
    activity: tuple[ToolCallStarted | ToolCallFinished, ...] = ()
    kind: Literal["text_update"] = "text_update"


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """A turn began in this conversation (adapters may show a typing indicator)."""

    answers: str | None = None
    """The :attr:`InboundMessage.message_ref` of the message the turn answers."""
    kind: Literal["turn_started"] = "turn_started"


@dataclass(frozen=True, slots=True)
class SourceNotice:
    """What a channel's receiving side has to say to a conversation (a file refused, an
    update it could not read, a turn interrupted elsewhere): it hands it to the pump
    with the messages, and the pump delivers it like its own notices (a receiving side
    never calls its adapter)."""

    conversation_id: ConversationId
    notice: Notice


Delivery = Notice | TextUpdate | TurnStarted | AgentEvent | VoiceClip
"""What the pump hands an adapter: its own notices and coalesced text, plus the
runtime's tool and terminal events passed through unchanged."""


class ChannelSource(Protocol):
    channel_id: ChannelId

    def messages(self) -> AsyncIterator[InboundMessage | SourceNotice]:
        """Inbound messages (and the receiving side's notices), until the source is
        exhausted or cancelled."""
        ...


class ChannelAdapter(Protocol):
    channel_id: ChannelId

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        """Render ``event`` to the conversation. Must not raise for delivery failures;
        an adapter logs and absorbs them."""
        ...


class DeliveryAllowlist(Protocol):
    """May a conversation still be written to when nobody there asked (a scheduled run's
    answer)? A channel answers by its own allowlist as the config stands now: a chat
    that was allowed when a schedule was made may not be any longer."""

    def refusal(self, address: Address) -> str | None:
        """None when ``address`` may be written to; otherwise why not, in words fit for a
        log line and the operator's CLI (e.g. "user 42 is not in allowed_user_ids")."""
        ...


EXIT_CONFIG = 2
"""The exit code of any configuration or state-folder problem, the CLI's and a channel's
(a secret unset): the unit's ``RestartPreventExitStatus`` keeps systemd from restarting
into it."""
EXIT_UNAUTHORIZED = 77
"""A channel's exit code when its platform refuses the bot's credentials."""
EXIT_PLATFORM_SETTING = 78
"""A channel's exit code when a setting on the platform's side stops it and a restart
cannot help until someone changes it (another poller holds Telegram's token, Discord's
Message Content intent is off): the unit's ``RestartPreventExitStatus`` lists it too."""


class ChannelFatalError(Exception):
    """A channel cannot go on and the daemon must stop (e.g. another instance polls the
    same Telegram token). ``exit_code`` lets a service manager tell causes apart."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
