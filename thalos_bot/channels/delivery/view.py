"""What one chat should show for one answer (or one notice), and the next call to get
there: the kit's "final exactly once".

A :class:`View` holds the desired source text and what has been rendered so far:
``offset`` characters of the text are *committed* to finished messages, and the rest is
the current part, shown live (an edited message or a draft) while the answer streams.
:meth:`View.next_step` compares the two and names one platform call; the transport's
sender makes it and reports back (Telegram's: ``thalos_bot_telegram.sender``). Only the
latest desired text is ever looked at, so intermediate states that arrive while a call
or a wait is under way are skipped, never queued.

The final text is diffed against the committed prefix, so it is delivered exactly once:
nothing rendered is sent again, and nothing is left out.
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass, field
from typing import Literal

from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.text.split import Carry, Part, split

StreamMode = Literal["draft", "edit", "off"]
"""How an answer streams: ``draft``, a live preview that is not yet a message (Telegram's
``sendMessageDraft``; a transport without one streams by ``edit``); ``edit``, one
message edited as the answer grows; ``off``, the final text only."""

DEFAULT_LIMIT = 4096
"""The message limit a view is planned against when the caller names none (Telegram's;
every sender passes its transport's own)."""

DRAFT_KEEPALIVE = 20.0
"""A draft vanishes after 30 s without an update; an unchanged one is re-sent this often."""

_draft_ids = itertools.count(secrets.randbelow(1 << 30) + 1)


@dataclass(frozen=True, slots=True)
class Send:
    part: Part
    commit: bool
    """True: the part is complete and becomes a finished message. False: it becomes the
    live message of an answer still streaming (edit mode)."""


@dataclass(frozen=True, slots=True)
class Edit:
    message_id: str
    part: Part
    commit: bool


@dataclass(frozen=True, slots=True)
class Draft:
    draft_id: int
    part: Part
    activity: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.part.text, self.activity)


Step = Send | Edit | Draft


@dataclass(slots=True)
class View:
    kind: Literal["answer", "notice"]
    text: str = ""
    closed: bool = False
    activity: str = ""
    """The latest tool activity line (shown in drafts only)."""
    offset: int = 0
    fence: Carry | None = None
    live_id: str | None = None
    """The platform's reference to the live message (opaque to the kit)."""
    live_text: str | None = None
    """The part text the live message shows; None when unknown (an edit may have failed)."""
    live_open: bool = False
    """The live message is a preview still appended to (a wire's
    :class:`~thalos_bot.channels.delivery.wire.Appending`): completing its part takes a
    call that closes it, even when it already shows the whole part."""
    final_call: bool = False
    """Completing the live part is a call even when the message shows it already (see
    :attr:`~thalos_bot.channels.delivery.wire.WireLimits.final_call`)."""
    draft_id: int = field(default_factory=lambda: next(_draft_ids))
    draft_key: tuple[str, str] | None = None
    draft_at: float = 0.0
    plain: bool = False
    """Send the current part as plain text (the platform refused its markup, or a
    notice)."""
    streaming: bool = True
    """False once streaming this answer was given up (the final is still delivered)."""
    parts_done: int = 0
    """Parts committed so far (each a finished message, or skipped)."""
    journal: DeliveryJournal | None = None
    """The outbox row this view delivers, told how far it got and when it is done."""
    noted_parts: int = 0
    """``parts_done`` as the journal last heard it."""
    refused: bool = False
    """The platform refused a part for good."""
    doubt: dict[str, object] | None = None
    """A send an earlier process left in doubt: what its journal noted before the send
    (the transport's probe reads it: a key, a floor and the exact fields sent, ...)."""
    thread: str | None = None
    """The thread the view goes to (Telegram: the forum topic), if any."""
    reply_to: str | None = None
    """The message the view's first message quotes (in a group: the one it answers)."""
    key: str = field(default_factory=lambda: secrets.token_hex(8))
    """The current part's idempotency key: the same until the part is committed, so a
    send made again after a doubt is the same request (Matrix transaction ids, Discord
    nonces) or can be looked for (Slack metadata, an email's Message-ID)."""
    command: bool = False
    """A command's reply (a notice): it goes before files queued ahead of it."""

    @classmethod
    def notice(cls, text: str, thread: str | None = None, *, command: bool = False) -> View:
        return cls("notice", text, closed=True, plain=True, thread=thread, command=command)

    # -- changes from the pump ---------------------------------------------------------

    def close(self, final: str) -> bool:
        """The authoritative full text arrived. Returns False if it does not extend what
        is already committed (that part is kept; only the rest of ``final`` follows)."""
        committed = self.text[: self.offset]
        consistent = final.startswith(committed)
        self.text = final if consistent else committed + final[len(committed) :]
        self.closed = True
        return consistent

    # -- planning ----------------------------------------------------------------------

    def next_step(
        self, mode: StreamMode, now: float = 0.0, limit: int = DEFAULT_LIMIT
    ) -> Step | None:
        """The next call that brings the chat closer to this view, or None (nothing to do
        now; for a closed view: done)."""
        while True:
            if not self.closed and (mode == "off" or not self.streaming):
                return None
            parts = split(self.text[self.offset :], self.fence, limit)
            first = parts[0]
            complete = self.closed or len(parts) > 1
            if not first.text.strip():
                if len(parts) > 1:
                    self.commit(first)
                    continue
                if not self.closed and mode == "draft" and self.activity:
                    return self._draft(first, now)
                return None
            if complete:
                shown = self.live_id is not None and self.live_text == first.text
                if shown and not (self.live_open or self.final_call):
                    self.commit(first)
                    continue
                if self.live_id is not None:
                    return Edit(self.live_id, first, commit=True)
                return Send(first, commit=True)
            if mode == "draft":
                return self._draft(first, now)
            if self.live_id is None:
                return Send(first, commit=False)
            if self.live_text != first.text:
                return Edit(self.live_id, first, commit=False)
            return None

    def _draft(self, part: Part, now: float) -> Draft | None:
        step = Draft(self.draft_id, part, self.activity)
        if step.key != self.draft_key or now - self.draft_at >= DRAFT_KEEPALIVE:
            return step
        return None

    def wake_at(self, mode: StreamMode) -> float | None:
        """When an unchanged view next needs a call (a draft keepalive), if ever."""
        if mode == "draft" and not self.closed and self.streaming and self.draft_key:
            return self.draft_at + DRAFT_KEEPALIVE
        return None

    @property
    def done(self) -> bool:
        return self.closed and self.next_step("off") is None

    # -- results from the sender -------------------------------------------------------

    def commit(self, part: Part) -> None:
        """``part`` is now a finished message (or, after a failure that may have been
        delivered, is treated as one): the next part starts after it."""
        self.offset += part.consumed
        self.parts_done += 1
        self.fence = part.fence_after
        self.live_id = None
        self.live_text = None
        self.live_open = False
        self.draft_id = next(_draft_ids)
        self.draft_key = None
        self.plain = self.kind == "notice"
        self.key = secrets.token_hex(8)

    def shown_live(self, message_id: str, part: Part) -> None:
        self.live_id = message_id
        self.live_text = part.text
