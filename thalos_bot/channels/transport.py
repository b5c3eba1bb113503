"""The ports a transport plug-in implements, and what of the kit consumes each.

A transport (``channels/<name>/``, found through the ``thalos_bot.channels`` entry
point: see :mod:`thalos_bot.channels.registry`) holds only what is its own:

1. **The wire client** — its platform library or HTTP calls. Nothing of the kit
   imports it; the transport maps its exceptions onto
   :class:`~thalos_bot.channels.delivery.failure.Failure` (a
   :class:`~thalos_bot.channels.delivery.failure.Classified`), and the kit's delivery
   machinery acts on the kind alone: retry-after blocks the chat
   (:meth:`~thalos_bot.channels.pacing.gate.ChatGate.block_for`), a failure that cannot
   have arrived is repeated after a backoff (:mod:`thalos_bot.channels.pacing.backoff`),
   a send in doubt goes to the probe (4).
2. **Update/event decoding** — its updates into the kit's
   :class:`~thalos_bot.channels.ports.InboundMessage` (the ``conversation_id`` it mints,
   the configured security context for every admitted sender, never one taken from the
   platform). Admission is the kit's: the
   :class:`~thalos_bot.channels.admission.allowlist.Allowlist`, pairing codes
   (:mod:`thalos_bot.channels.admission.pairing`), mention gating in groups
   (:mod:`thalos_bot.channels.admission.mentions`: the transport decodes an
   :class:`~thalos_bot.channels.admission.mentions.Addressing`), and the guard that keeps
   one bad update from ending the daemon (:mod:`thalos_bot.channels.admission.guard`).
3. **The dialect renderer** — a
   :class:`~thalos_bot.channels.markdown.dialect.Dialect`, the emitter the shared
   CommonMark walk writes through (:class:`~thalos_bot.channels.markdown.render.Renderer`);
   HTML dialects configure :class:`~thalos_bot.channels.markdown.html.HtmlDialect`.
4. **The "did that send arrive?" probe** — an :class:`ArrivalProbe`, asked before a
   send in doubt is made again (Telegram: probing message ids with an edit of the
   identical text; Matrix: none needed, ``PUT /send/{txnId}`` is idempotent, so its
   probe is the repeat itself).
5. **Its limits, as data** — a :class:`TransportLimits`: the message length the
   splitter (:func:`thalos_bot.channels.text.split.split`) cuts at, the caption
   length, the download cap for the intake, and the pacing
   (:class:`~thalos_bot.channels.pacing.gate.ChatGate`,
   :class:`~thalos_bot.channels.pacing.gate.GlobalPacer`).

What it hands the daemon is a :class:`~thalos_bot.channels.registry.ChannelPair`: a
:class:`~thalos_bot.channels.ports.ChannelSource` (the decoded, admitted messages) and
a :class:`~thalos_bot.channels.ports.ChannelAdapter` (optionally a
:class:`~thalos_bot.channels.final.ConfirmingAdapter`, so that the outbox's finals are
delivered exactly once, journaled through a
:class:`~thalos_bot.channels.final.DeliveryJournal`). Asking tool approvals is the
adapter's ``ask_approval`` (buttons where the platform has them; replies or reactions
where it has not). The contract suite in ``tests/channels/contract/`` is the definition
of "a transport works": every plug-in runs it over its own fake or real server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Protocol


@dataclass(frozen=True, slots=True)
class TransportLimits:
    """A transport's limits, as data (the kit's machinery reads nothing else)."""

    message_units: int
    """The most one message's text may hold, in UTF-16 code units (what the splitter
    cuts at; a byte limit of UTF-8 is given as a third of it)."""
    caption_units: int
    """The most an image's caption may hold."""
    download_bytes: int
    """The largest attachment the intake fetches."""
    chat_min_interval: float
    """Least time between two calls that change what a chat shows."""
    global_rate: float
    """Calls per second across all chats."""


class Arrival(Enum):
    ARRIVED = "arrived"
    """The message is there: adopt it, send nothing again."""
    MISSING = "missing"
    """It did not arrive: send it again."""
    UNKNOWN = "unknown"
    """The probe could not tell (gave up): sending again may show it twice (logged)."""


class ArrivalProbe(Protocol):
    """The transport's answer to "did that send arrive?", asked after a send whose
    outcome is unknown (:attr:`~thalos_bot.channels.delivery.failure.Failure.MAYBE_SENT`)
    and after a restart for an outbox row whose journal holds a send begun but not
    confirmed. ``sent`` is exactly what was sent (the probe may need to repeat it), as
    journaled: JSON values only."""

    async def arrived(self, conversation: str, sent: Mapping[str, object]) -> Arrival: ...
