"""A tool-approval question as the chat's outbox holds it, and the edit that closes it
(on a platform with buttons, the keyboard goes with the question and the edit removes it).

A :class:`QuestionView` sits in the outbox like a notice: it goes out ahead of an answer
still streaming (the turn is waiting for it, and a queue of streamed edits must not hold
it back), but after a finished answer queued before it. Its one step is
:class:`SendQuestion`; the sender makes it like every other call, paced, waiting out
retry_after, and checking a send in doubt (probing with the identical text *and*
keyboard, so a probe that finds the question changes nothing) before sending it again.

Once the question is decided, timed out or withdrawn, an :class:`OutcomeView` edits it
to say so, which also removes the keyboard (:class:`EditQuestion`), through the same
sender.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

import anyio

from thalos_bot.channels.delivery.view import StreamMode

M = TypeVar("M")
"""The platform's answer controls (Telegram: an inline keyboard; none where there are
no buttons)."""


@dataclass(frozen=True, slots=True)
class SendQuestion(Generic[M]):
    html: str
    markup: M


@dataclass(frozen=True, slots=True)
class EditQuestion:
    message_id: str
    html: str


@dataclass(slots=True, eq=False)
class QuestionView(Generic[M]):
    html: str
    markup: M
    thread: str | None = None
    message_id: str | None = None
    """The question's message, once it is in the chat."""
    checking: bool = False
    """Its send is in doubt and being checked (see the transport's probe)."""
    withdrawn: bool = False
    """Nobody waits for the answer any more: if it is not out yet, it is not sent."""
    given_up: bool = False
    """It will never be in the chat: the platform refused it for good (the user blocked the
    bot, the chat is gone)."""
    settled: anyio.Event = field(default_factory=anyio.Event)
    """Set once it is in the chat, or will never be."""
    kind: Literal["question"] = "question"
    closed: bool = True

    def next_step(
        self, mode: StreamMode, now: float = 0.0, limit: int = 0
    ) -> SendQuestion[M] | None:
        return None if self.done else SendQuestion(self.html, self.markup)

    def wake_at(self, mode: StreamMode) -> float | None:
        return None

    @property
    def done(self) -> bool:
        return self.message_id is not None or self.given_up or self.withdrawn

    key: str = field(default_factory=lambda: secrets.token_hex(8))
    """The question's idempotency key (see :attr:`View.key`)."""

    def shown(self, message_id: str) -> None:
        self.message_id = message_id
        self.checking = False
        self.settled.set()

    def give_up(self) -> None:
        self.given_up = True
        self.checking = False
        self.settled.set()


@dataclass(slots=True, eq=False)
class OutcomeView(Generic[M]):
    question: QuestionView[M]
    outcome: str
    """How it ended: the line put under the question."""
    edited: bool = False
    kind: Literal["outcome"] = "outcome"
    closed: bool = True

    @property
    def html(self) -> str:
        """The question's full new text: the question, then how it ended."""
        return f"{self.question.html}\n{self.outcome}"

    def next_step(self, mode: StreamMode, now: float = 0.0, limit: int = 0) -> EditQuestion | None:
        message_id = self.question.message_id
        if self.edited or message_id is None:
            return None
        return EditQuestion(message_id, self.html)

    def wake_at(self, mode: StreamMode) -> float | None:
        return None

    @property
    def done(self) -> bool:
        if self.edited:
            return True
        question = self.question
        # A question never shown needs no edit; one being checked may turn out shown.
        return question.message_id is None and not question.checking and question.done
