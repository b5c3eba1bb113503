"""Approvals on a platform without buttons (Matrix, Signal): the kit's flow
(:class:`~thalos_bot.channels.approvals.asking.Asking`), the question in Markdown with
its choices listed under it, answered by a reaction to it (✅ once, 🔁 for the session,
❌ deny). The kit decides who may answer; an answer to one of the bot's questions, open
or closed, is never a message for the model."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from thalos_bot.channels.approvals.asking import Asking, Post
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict

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
        self._choices, self._render = choices, render
        self._asked: deque[str] = deque(maxlen=256)
        """Questions shown: a late answer to one is swallowed, not a message."""
        self.withdraw_all = self._asking.withdraw_all

    async def ask(self, chat: A, request: ApprovalRequest) -> ApprovalAnswer:
        view = QuestionView(self._render(question(request)), self._choices)
        try:
            return await self._asking.ask(chat, request, Asking.token(), view)
        finally:
            if view.message_id is not None:
                self._asked.append(view.message_id)

    def answer(self, chat: A, target: str, verdict: Verdict | None, *, user: str, who: str) -> bool:
        """True when ``target`` is one of the bot's questions, open or closed."""
        token = self._asking.token_of(chat, target)
        if token is None:
            return target in self._asked
        self._asking.answer(token, chat, target, verdict, user=user, who=who)
        return True
