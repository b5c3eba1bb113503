"""Open approval questions: :meth:`Asking.ask` puts one in the chat's outbox and waits;
:meth:`Asking.decide` settles it from an answer the transport decoded (a button press,
a reply, a reaction).

Only the transport knows how an answer looks on its platform: it decodes one and hands
it to :meth:`Asking.answer` with the answering user's platform id. Everything after is
shared: a stranger's answer (not in the channel's allowed users), or another person's
(not the asking turn's, without the approver role), changes nothing; a
duplicate or late answer (the question
was decided, timed out or withdrawn) has no effect; a decision edits the question to
show the outcome and who decided (which also removes a keyboard); a withdrawn question
(timeout or ``/cancel``) is edited to say it was not run; a question the platform
refuses for good is a denial. When the channel stops, every open question is withdrawn
at once and denied (:meth:`Asking.withdraw_all`).

On replicas (:attr:`Asking.presses` set) a press for a question this process did not
ask is relayed to every replica, whose ``Asking`` applies it as its own press
(:meth:`Asking.relayed`; see :mod:`thalos_bot.channels.approvals.relay`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
import structlog

from thalos_bot.channels.approvals.relay import Press, Presses, chat_key
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import SHUTDOWN, ApprovalAnswer, ApprovalRequest, Verdict

log = structlog.get_logger(__name__)

A = TypeVar("A")
"""The transport's address of a chat (opaque to the kit)."""
M = TypeVar("M")

OUTCOMES: dict[Verdict, str] = {
    "approved": "✅ Approved",
    "approved-session": "✅ Approved for this session",
    "denied": "⛔ Denied",
}
WITHDRAWN = "⌛ Not answered in time, or cancelled: not run."
SHUT_DOWN = "⏹ Withdrawn: the bot is shutting down. Not run."
CLOSED = "This question is already closed."
APPROVER = "approver"
"""The role that may answer anyone's question (else only the asking turn's person)."""
NOT_YOURS = "Only the people this bot serves can answer this question."
"""Told privately to a stranger who answered, where the platform can."""
RELAYED = "Noted: passed on to the replica that asked."
"""What :meth:`Asking.answer` returns for a press relayed to the other replicas (the
asking one edits the question to show the outcome)."""
CHOICES: tuple[tuple[Verdict, str], ...] = (
    ("approved", "Approve"),
    ("approved-session", "Approve for this session"),
    ("denied", "Deny"),
)
"""Each answer's label, where the platform shows buttons."""

Post = Callable[[A, QuestionView[M] | OutcomeView[M]], None]
"""Puts a question (or the edit closing one) in a chat's outbox."""


@dataclass(slots=True)
class Open(Generic[A, M]):
    chat: A
    view: QuestionView[M]
    caller: str = ""
    """The principal whose turn asked."""
    decided: anyio.Event = field(default_factory=anyio.Event)
    answer: ApprovalAnswer | None = None


class Asking(Generic[A, M]):
    """Open questions by token. ``channel`` prefixes the log events."""

    def __init__(self, post: Post[A, M], channel: str, seats: Seats) -> None:
        """``seats``: who the transport's users are; an answer counts from an allowed
        user who is the asking turn's person, or holds the :data:`APPROVER` role."""
        self._post = post
        self._seats = seats
        self._open: dict[str, Open[A, M]] = {}
        self._stopping = False
        self._withdrawn = f"{channel}_question_withdrawn"
        self._undelivered = f"{channel}_question_undelivered"
        self._stranger = f"{channel}_answer_refused_stranger"
        self._closed = f"{channel}_answer_to_no_open_question"
        self._relayed = f"{channel}_answer_relayed"
        self._channel = channel
        self.presses: Presses | None = None
        """Replicas: where a press for no question asked here is relayed (None: one
        process)."""

    @staticmethod
    def token() -> str:
        """A new question's token (short: Telegram's callback data holds 64 bytes)."""
        return secrets.token_urlsafe(9)

    async def ask(
        self, chat: A, request: ApprovalRequest, token: str, view: QuestionView[M]
    ) -> ApprovalAnswer:
        """Ask ``view`` (named ``token``) in the chat and wait for the answer; cancelling
        withdraws the question. Once the channel stops, nothing is asked: the answer is
        a denial (see :meth:`withdraw_all`)."""
        if self._stopping:
            log.info(self._withdrawn, chat=chat, tool=request.tool, asked=False)
            return ApprovalAnswer("denied", SHUTDOWN)
        entry = Open(chat, view, request.caller)
        self._open[token] = entry
        self._post(chat, view)
        try:
            await _first(view.settled, entry.decided)
            if entry.answer is None and view.message_id is None:
                log.warning(self._undelivered, chat=chat, tool=request.tool)
                return ApprovalAnswer("denied", "error")
            await entry.decided.wait()
        except anyio.get_cancelled_exc_class():
            view.withdrawn = True  # not sent if it is not out yet
            self._close(entry, WITHDRAWN)
            raise
        finally:
            self._open.pop(token, None)
        assert entry.answer is not None  # set before decided
        return entry.answer

    def withdraw_all(self) -> None:
        """The channel stops: deny every open question and edit it to say why (the
        turn can then finish within the shutdown grace, and no tool starts that the
        grace's end might cut off halfway)."""
        self._stopping = True
        for entry in list(self._open.values()):
            if entry.answer is not None:
                continue
            entry.answer = ApprovalAnswer("denied", SHUTDOWN)
            entry.view.withdrawn = True  # not sent if it is not out yet
            entry.decided.set()
            log.info(self._withdrawn, chat=entry.chat, asked=True)
            self._close(entry, SHUT_DOWN)

    def open_tokens(self) -> list[str]:
        """The questions asked here and not answered yet (for a platform that looks up
        their answers given on other replicas)."""
        return [token for token, entry in self._open.items() if entry.answer is None]

    def token_of(self, chat: A, message_id: str) -> str | None:
        """The open question shown as the message ``message_id`` of the chat, for a
        platform whose answers name the question's message rather than carry its token
        (a reaction, a reply)."""
        return next(
            (
                token
                for token, entry in self._open.items()
                if entry.chat == chat and entry.view.message_id == message_id
            ),
            None,
        )

    def shown_as(self, token: str) -> str:
        """The message the open question ``token`` is shown as ("": none is open, or it
        is not out yet), for a platform whose answer names the question by its token
        alone (a code typed in a reply)."""
        entry = self._open.get(token)
        return entry.view.message_id or "" if entry is not None else ""

    def answer(
        self,
        token: str | None,
        chat: A,
        message_id: str,
        choice: Verdict | None,
        *,
        user: str,
        who: str,
    ) -> str | None:
        """``user`` (a platform id) answered ``choice`` on the message ``message_id``.
        Returns what to tell them: None when they are not allowed (nothing changes),
        :data:`CLOSED` when it answers no open question, else the outcome line. ``who``
        is shown (escaped for the dialect)."""
        entry = self._open.get(token) if token is not None else None
        if user not in self._seats.allowed or (entry is not None and not self._theirs(entry, user)):
            log.info(self._stranger)
            return None
        if entry is None and token is not None and choice is not None and self.presses is not None:
            press = Press(token, chat_key(chat), message_id, choice, user, who)
            if self.presses.relay(press):
                log.info(self._relayed)
                return RELAYED
        decided = self.decide(
            token, chat, message_id, choice, who=who, decider=f"{self._channel}:{user}"
        )
        if decided is None:
            log.info(self._closed)  # a duplicate, a late answer, or no question's
        return decided or CLOSED

    def relayed(self, press: Press) -> None:
        """A press another replica (or this one) relayed: applied as a press here when
        this process asked that question, else ignored."""
        entry = self._open.get(press.token)
        if entry is None:
            return  # another replica's question, or none (decided, timed out)
        if chat_key(entry.chat) != press.chat:
            log.info(self._closed, relayed=True)  # not this question's chat
            return
        if press.user not in self._seats.allowed or not self._theirs(entry, press.user):
            log.info(self._stranger, relayed=True)
            return
        decided = self.decide(
            press.token,
            entry.chat,
            press.message_id,
            press.verdict,
            who=press.who,
            decider=f"{self._channel}:{press.user}",
        )
        if decided is None:
            log.info(self._closed, relayed=True)

    def _theirs(self, entry: Open[A, M], user: str) -> bool:
        """Is ``user`` the person whose turn asked, or an approver?"""
        who = self._seats.context(user)
        return not entry.caller or who.id == entry.caller or APPROVER in who.roles

    def decide(
        self,
        token: str | None,
        chat: A,
        message_id: str,
        choice: Verdict | None,
        *,
        who: str,
        decider: str,
    ) -> str | None:
        """An allowed user answered ``choice`` on the message ``message_id`` of the chat.
        Returns the outcome line, or None when that is no open question's answer (a
        duplicate, a late answer, another message). ``who`` is shown (escaped for the
        dialect), ``decider`` recorded."""
        entry = self._open.get(token) if token is not None else None
        if (
            entry is None
            or chat != entry.chat
            or entry.view.message_id not in {None, message_id}
            or choice is None
            or entry.answer is not None
        ):
            return None
        if entry.view.message_id is None:
            # Answered while its send is still being checked: the message is its own.
            entry.view.shown(message_id)
        entry.answer = ApprovalAnswer(choice, decider)
        entry.decided.set()
        self._close(entry, f"{OUTCOMES[choice]} by {who}.")
        return OUTCOMES[choice]

    def _close(self, entry: Open[A, M], outcome: str) -> None:
        """Have the question edited to say how it ended."""
        self._post(entry.chat, OutcomeView(entry.view, outcome))


async def _first(*events: anyio.Event) -> None:
    """Return once any of ``events`` is set."""
    async with anyio.create_task_group() as group:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        for event in events:
            group.start_soon(wait, event)
