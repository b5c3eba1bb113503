"""The wire: what a transport plug-in hands the kit's delivery engine.

A wire holds only the platform's own: its verbs (send a message, edit one, upload an
image, show typing), the classification of its client's errors onto the kit's
:class:`~thalos_bot.channels.delivery.failure.Failure` kinds, its dialect, and its limits
as data. Everything else (the outbox, streamed previews and the final, splitting,
pacing and retry-after, the send-in-doubt check, the journal, resuming after a restart)
is the engine's (:mod:`thalos_bot.channels.delivery.engine`).

Addresses and message references are the platform's, opaque to the kit: a chat is
whatever the plug-in's ``A`` is (a channel id, a room id, a place), a message is a
string (Discord's snowflake, a Slack ``ts``, a Matrix event id).

Exactly once rests on what the platform offers, named by :attr:`WireLimits.resend`:

- ``"repeat"``: a send carries :attr:`Outgoing.key` and the platform answers a repeat
  with the message the first try made (Matrix transaction ids, Discord nonces): a send
  in doubt is simply made again with the same key.
- ``"find"``: a send carries the key where the platform keeps it (Slack's message
  metadata, an email's ``Message-ID``), and the wire's :meth:`Finding.find` looks for
  it before a send in doubt is made again.
- ``"probe"``: the platform offers neither, and the transport's sender brings its own
  check (Telegram's probe of message ids, through the engine's hooks).

A platform whose live preview can be *appended to* (a native stream of the answer, as
Slack's ``chat.startStream``) rather than edited offers it with the optional
:class:`Appending` verbs beside the wire's own; the engine then opens, grows and closes
the preview with them, and edits the message like any other once it is closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from thalos_bot.channels.delivery.failure import Classified
from thalos_bot.domain.events import ToolImage, VoiceClip

A_contra = TypeVar("A_contra", contravariant=True)
"""The platform's address of a chat."""
M = TypeVar("M")
"""The platform's answer controls on a question (buttons), or None where it has none."""

Resend = Literal["repeat", "find", "probe"]


@dataclass(frozen=True, slots=True)
class WireLimits:
    """A wire's limits and guarantees, as data."""

    message_units: int
    """The most one message may hold, in UTF-16 code units (what the splitter cuts at;
    a rendered part longer than this is sent as its plain source)."""
    caption_units: int
    """The most an image's caption may hold."""
    chat_min_interval: float
    """Least time between two calls that change what one chat shows."""
    global_rate: float
    """Calls per second across all chats."""
    resend: Resend
    """How a send in doubt is settled (see the module's docstring)."""
    chat_burst: int = 2
    """Calls a chat takes back to back (a live preview and the final that completes it;
    Discord's per-channel bucket takes 5)."""
    typing_interval: float = 5.0
    """How often the typing indicator is renewed while an answer is open."""
    global_burst: int = 1
    """Calls across the chats taken back to back within ``global_rate`` (Slack's tiers
    tolerate a short burst)."""
    final_call: bool = False
    """An answer's complete part is a call of its own even when its live message shows
    that text already (the web page's final is an event apart from its previews)."""


@dataclass(frozen=True, slots=True)
class Outgoing(Generic[M]):
    """One message as the engine asks for it."""

    text: str
    """The text to show, rendered in the wire's dialect (or plain, see ``plain``)."""
    key: str
    """The message's idempotency key: the same for every try of this message."""
    plain: bool = False
    """``text`` is the plain source (the dialect's render was refused or too long)."""
    notice: bool = False
    """The bot's own sentence, not an answer (Matrix sends it as ``m.notice``)."""
    thread: str | None = None
    """The thread (or forum topic) the message goes to."""
    reply_to: str | None = None
    """The message it quotes (in a group, an answer's first message quotes the one it
    answers)."""
    controls: M | None = None
    """A question's answer controls (None: none, and an edit removes them)."""
    activity: str = ""
    """A draft's latest tool activity line (see :class:`DraftWire`)."""
    complete: bool = False
    """The part is finished (a final part, a notice), not a live preview that streams
    on: a wire whose platform shows the two apart (the web page) reads it."""


class Wire(Protocol[A_contra, M]):
    """A platform's verbs. Each raises its client's own errors; :meth:`classify` says
    what they mean."""

    @property
    def name(self) -> str:
        """The transport's name (log events and metrics are prefixed with it)."""
        ...

    @property
    def limits(self) -> WireLimits: ...

    def render(self, source: str) -> str:
        """``source`` (the model's Markdown) in the platform's dialect."""
        ...

    def classify(self, exc: Exception) -> Classified | None:
        """What a failed call means, or None: not the wire's (it is raised on)."""
        ...

    async def send(self, chat: A_contra, message: Outgoing[M]) -> str:
        """Post ``message``; the new message's reference."""
        ...

    async def edit(self, chat: A_contra, ref: str, message: Outgoing[M]) -> None:
        """Make the message ``ref`` show ``message`` (its controls go when it has none)."""
        ...

    async def upload(
        self, chat: A_contra, image: ToolImage | VoiceClip, caption: Outgoing[M]
    ) -> str:
        """Post a tool's image with its caption (plain text; its key and thread as for a
        message); the message's reference."""
        ...

    async def typing(self, chat: A_contra, thread: str | None) -> None:
        """Show that an answer is being written."""
        ...


@runtime_checkable
class Finding(Protocol[A_contra]):
    """The look-up a wire whose :attr:`WireLimits.resend` is ``"find"`` offers beside its
    verbs (and only such a wire: the engine refuses one without it)."""

    async def find(self, chat: A_contra, key: str) -> str | None:
        """The message sent with ``key``, if it is in the chat."""
        ...


def finding(wire: Wire[A_contra, Any]) -> Finding[A_contra] | None:
    """The wire's :class:`Finding` when its sends in doubt are looked for, else None; a
    ``"find"`` wire without one is a plug-in's mistake, said at once."""
    if wire.limits.resend != "find":
        return None
    if not isinstance(wire, Finding):
        raise TypeError(f"{wire.name}: the wire's resend is 'find' but it has no find()")
    return wire


@runtime_checkable
class DraftWire(Wire[A_contra, M], Protocol[A_contra, M]):
    """A wire with live drafts: a preview that is not a message yet (Telegram's
    ``sendMessageDraft``); the engine streams by them in private chats when the
    rendering's mode is ``draft``."""

    async def draft(self, chat: A_contra, draft_id: int, message: Outgoing[M]) -> None:
        """Show ``message`` (and its :attr:`Outgoing.activity`) as the draft ``draft_id``."""
        ...


@runtime_checkable
class Appending(Protocol[A_contra]):
    """Optional: a live preview that is appended to. Its texts are the answer's source
    (the platform renders it); ``start``'s message carries the preview's key, and a start
    in doubt is settled like a send (:attr:`WireLimits.resend`). A refused ``start``
    (``UNSUPPORTED``, or any other refusal) means the chat's previews are edited
    messages from then on; a failed ``append`` or ``finish`` closes the preview, and the
    message is then edited to the part like any other."""

    def appends(self, chat: A_contra, thread: str | None) -> bool:
        """Whether an answer's live preview there is appended to (now)."""
        ...

    async def start(self, chat: A_contra, message: Outgoing[Any]) -> str:
        """Open a preview showing ``message.text``; its reference."""
        ...

    async def append(self, chat: A_contra, ref: str, text: str) -> None:
        """Add ``text`` to the open preview ``ref``."""
        ...

    async def finish(self, chat: A_contra, ref: str, text: str, key: str) -> None:
        """Add ``text`` (maybe empty) and close the preview: a finished message (``key``:
        its part's idempotency key, kept with it where the platform can)."""
        ...


def with_controls_line(message: Outgoing[str]) -> str:
    """The text, and under a question its controls where they are a line of text (on a
    platform without buttons, how to answer it); an edit without them, closing the
    question, takes the line away."""
    return "\n\n".join(part for part in (message.text, message.controls) if part)


IMAGES = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def file_name(image: ToolImage | VoiceClip) -> str:
    """What an uploaded tool image (``image.png``) or voice clip is called."""
    if isinstance(image, VoiceClip):
        return image.name
    return f"image.{IMAGES.get(image.media_type, 'bin')}"
