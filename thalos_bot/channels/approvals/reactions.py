"""Approvals on a platform without buttons (Matrix, Signal): the kit's flow
(:class:`~thalos_bot.channels.approvals.asking.Asking`), the question in Markdown with
its choices listed under it, answered by a reaction to it (✅ once, 🔁 for the session,
❌ deny). The kit decides who may answer; an answer to one of the bot's questions, open
or closed, is never a message for the model.

On replicas an answer names the question's message, not its token (the asking replica
alone knows that): the connection's owner relays it with no token (:meth:`relay`), and
the replica that shows an open question as that message applies it (:meth:`relayed`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Generic, TypeVar

import structlog

from thalos_bot.channels.approvals.asking import Asking, Post
from thalos_bot.channels.approvals.relay import Press, Presses, chat_key
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict

log = structlog.get_logger(__name__)

A = TypeVar("A")

REACTIONS: dict[str, Verdict] = {
    "✅": "approved",
    "✔": "approved",
    "👍": "approved",
    "🔁": "approved-session",
    "❌": "denied",
    "👎": "denied",
}
CHOICES = "React ✅ to allow once, 🔁 for this session, ❌ to deny."


def reaction_verdict(emoji: str) -> Verdict | None:
    """The verdict of a reaction (with or without its emoji variation selector)."""
    return REACTIONS.get(emoji.strip().replace("\ufe0f", ""))


def question(request: ApprovalRequest) -> str:
    return f"🔐 Allow **{request.tool}**?\n\n```\n{request.preview}\n```"


class ReactionApprovals(Generic[A]):
    def __init__(
        self,
        post: Post[A, str],
        channel: str,
        seats: Seats,
        *,
        choices: str = CHOICES,
        render: Callable[[str], str] = str,
    ) -> None:
        self._asking = Asking[A, str](post, channel, seats)
        self._relayed = f"{channel}_answer_relayed"
        self._choices, self._render = choices, render
        self._asked: deque[str] = deque(maxlen=256)
        """Questions shown: a late answer to one is swallowed, not a message."""
        self._shown: dict[str, tuple[A, QuestionView[str]]] = {}
        """The open questions by token (for an answer relayed by its message)."""
        self.withdraw_all = self._asking.withdraw_all

    @property
    def presses(self) -> Presses | None:
        """Replicas: where an answer to a question asked elsewhere is relayed."""
        return self._asking.presses

    @presses.setter
    def presses(self, presses: Presses | None) -> None:
        self._asking.presses = presses

    async def ask(self, chat: A, request: ApprovalRequest) -> ApprovalAnswer:
        view = QuestionView(self._render(question(request)), self._choices)
        token = Asking.token()
        self._shown[token] = (chat, view)
        try:
            return await self._asking.ask(chat, request, token, view)
        finally:
            self._shown.pop(token, None)
            if view.message_id is not None:
                self._asked.append(view.message_id)

    def relay(self, chat: A, target: str, verdict: Verdict | None, *, user: str, who: str) -> bool:
        """An answer to ``target``, no question of this process: relayed to every
        replica (True), for the one whose open question is that message."""
        if self.presses is None or verdict is None:
            return False
        relayed = self.presses.relay(Press("", chat_key(chat), target, verdict, user, who))
        if relayed:
            log.info(self._relayed, by="message")
        return relayed

    def relayed(self, press: Press) -> None:
        """An answer a replica relayed by its question's message: applied when an open
        question here is that message (who may answer is checked as for a press)."""
        if press.token:
            return  # a button's press, with its token: not this kind's
        token = next(
            (
                token
                for token, (chat, view) in self._shown.items()
                if chat_key(chat) == press.chat and view.message_id == press.message_id
            ),
            None,
        )
        if token is not None:
            self._asking.relayed(replace(press, token=token))

    def answer(self, chat: A, target: str, verdict: Verdict | None, *, user: str, who: str) -> bool:
        """True when ``target`` is one of the bot's questions, open or closed."""
        token = self._asking.token_of(chat, target)
        if token is None:
            return target in self._asked
        self._asking.answer(token, chat, target, verdict, user=user, who=who)
        return True
