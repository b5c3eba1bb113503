"""What one room's outbox holds: answers (streamed, then final), notices, tool images and
approval questions, each as the state the room should show.

An :class:`AnswerView` is one or more messages (parts, see :mod:`.render`): the first
goes out as a message once there is text, then ``m.replace`` edits bring it up to date,
at most once per ``room_min_interval`` while it streams; once the answer is closed, each
part's final edit goes out as soon as the pacing and any ``retry_after_ms`` allow.
Every call holds its transaction id until it succeeds, so a retry after a timeout is
the same request to the homeserver, which never stores it twice; a final answer's
calls note theirs in the outbox row first (:meth:`AnswerView.progress`), so a retry
after a restart or a kill is the same request too.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.domain.events import ToolImage
from thalos_bot_matrix.render import split


def new_txn() -> str:
    return f"thalos.{secrets.token_hex(12)}"


@dataclass(slots=True)
class Part:
    event_id: str | None = None
    shown: str | None = None
    """The text the room shows for this part (None until its message is out)."""


@dataclass(frozen=True, slots=True)
class Call:
    """One send or edit: the part it is for, its text, and its transaction id."""

    index: int
    text: str
    txn: str
    target: str | None
    """The event an edit replaces (None: a new message)."""
    verify: bool = False
    """A new message an earlier process sent, text unknown: once made again (the same
    transaction id answers the event if it arrived), it gets its final edit too."""


@dataclass(slots=True, eq=False)
class AnswerView:
    text: str = ""
    closed: bool = False
    notice: bool = False
    reply_to: str | None = None
    """In a group, the event the answer replies to (its first part quotes it)."""
    activity: str = ""
    """The current tool status line, shown under the streamed text while it lasts."""
    parts: list[Part] = field(default_factory=list)
    journal: DeliveryJournal | None = None
    pending: Call | None = None
    """The call being made (kept across failed tries: its txn is reused)."""
    live: bool = True
    """Shown while it streams (``streaming = "edit"``); else only once closed."""
    kind: Literal["answer"] = "answer"

    @classmethod
    def notice_of(cls, text: str) -> AnswerView:
        return cls(text, closed=True, notice=True)

    def wanted(self) -> list[str]:
        text = (
            self.text if self.closed or not self.activity else f"{self.text}\n\n_{self.activity}_"
        )
        return split(text) if text.strip() else []

    def close(self, text: str) -> None:
        self.text = text
        self.activity = ""
        self.closed = True

    def next_call(self) -> Call | None:
        """The next send or edit that brings the room to what it should show."""
        if self.pending is not None:
            return self.pending
        if not self.closed and not self.live:
            return None
        wanted = self.wanted()
        while len(self.parts) < len(wanted):
            self.parts.append(Part())
        for index, text in enumerate(wanted):
            part = self.parts[index]
            if part.shown == text:
                continue
            self.pending = Call(index, text, new_txn(), part.event_id)
            return self.pending
        return None

    def made(self, call: Call, event_id: str) -> None:
        part = self.parts[call.index]
        if part.event_id is None:
            part.event_id = event_id
        part.shown = "" if call.verify else call.text
        self.pending = None

    @property
    def done(self) -> bool:
        if not self.closed:
            return False
        wanted = self.wanted()
        if not wanted:
            return True
        return len(self.parts) >= len(wanted) and all(
            self.parts[i].shown == text for i, text in enumerate(wanted)
        )

    # -- an outbox row's journal --------------------------------------------------------

    def progress(self) -> dict[str, object]:
        """What a restarted daemon needs: the parts' events, and the call in flight."""
        pending = self.pending
        wanted = self.wanted()
        return {
            "events": [part.event_id for part in self.parts],
            "shown": [part.shown == text for part, text in zip(self.parts, wanted, strict=False)],
            "pending": None
            if pending is None
            else {
                "index": pending.index,
                "txn": pending.txn,
                "target": pending.target,
                "final": pending.index < len(wanted) and pending.text == wanted[pending.index],
            },
        }

    def resume(self, progress: Mapping[str, object]) -> None:
        """Take up a delivery an earlier process began: its parts' events, which of them
        show their final text, and the call it was making (made again with the same
        transaction id, so the homeserver answers the same event if it had arrived)."""
        events = progress.get("events")
        shown = progress.get("shown")
        wanted = self.wanted()
        if isinstance(events, list):
            for index, event_id in enumerate(events):
                part = Part(event_id if isinstance(event_id, str) else None)
                final = isinstance(shown, list) and index < len(shown) and shown[index] is True
                if final and index < len(wanted):
                    part.shown = wanted[index]
                elif part.event_id is not None:
                    part.shown = ""  # shows something else: its final edit is still due
                self.parts.append(part)
        pending = progress.get("pending")
        if not isinstance(pending, Mapping):
            return
        at, txn, target = pending.get("index"), pending.get("txn"), pending.get("target")
        if not isinstance(at, int) or not isinstance(txn, str) or not 0 <= at < len(wanted):
            return
        while len(self.parts) <= at:
            self.parts.append(Part())
        final = pending.get("final") is True
        if not isinstance(target, str):
            # A new message that may have arrived: the same txn answers it if it did.
            self.pending = Call(at, wanted[at], txn, None, verify=not final)
        elif final:
            self.pending = Call(at, wanted[at], txn, target)
        # else an edit to streamed text was in flight: a fresh final edit follows anyway.


@dataclass(slots=True, eq=False)
class ImageView:
    """A tool's image, uploaded then sent as ``m.image``."""

    image: ToolImage
    txn: str = field(default_factory=new_txn)
    uri: str | None = None
    file: dict[str, Any] | None = None
    """In an encrypted room: the ``EncryptedFile`` of the upload, less its ``url``."""
    done: bool = False
    closed: bool = True
    kind: Literal["image"] = "image"


@dataclass(slots=True, eq=False)
class QuestionView:
    """An approval question: a message listing the choices. Once it is in the room,
    ``event_id`` is set and ``settled`` fires (also when it never will be)."""

    text: str
    txn: str = field(default_factory=new_txn)
    event_id: str | None = None
    withdrawn: bool = False
    """Nobody waits for the answer any more: if it is not out yet, it is not sent."""
    given_up: bool = False
    settled: anyio.Event = field(default_factory=anyio.Event)
    closed: bool = True
    kind: Literal["question"] = "question"

    @property
    def done(self) -> bool:
        return self.event_id is not None or self.given_up or self.withdrawn


@dataclass(slots=True, eq=False)
class OutcomeView:
    """The edit that closes a question: decided, timed out or withdrawn."""

    question: QuestionView
    text: str
    txn: str = field(default_factory=new_txn)
    done: bool = False
    closed: bool = True
    kind: Literal["outcome"] = "outcome"


Queued = AnswerView | ImageView | QuestionView | OutcomeView
