"""Tool approvals in a Matrix room, which has no buttons: the kit's flow (:class:`Asking`),
the choices listed under the question, answered by a reaction or a reply to it. Only an
allowed user decides; no answer to one of the bot's questions, open or closed, is a
message for the model."""

from __future__ import annotations

from collections import deque

import structlog

from thalos_bot.channels.approvals.asking import Asking, Post
from thalos_bot.channels.approvals.reactions import CHOICES as REACTION_CHOICES
from thalos_bot.channels.approvals.reactions import question, reaction_verdict
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict

log = structlog.get_logger(__name__)


REPLIES: dict[str, Verdict] = {
    **dict.fromkeys(("yes", "y", "ok", "approve"), "approved"),
    **dict.fromkeys(("session", "always"), "approved-session"),
    **dict.fromkeys(("no", "n", "deny"), "denied"),
}
CHOICES = REACTION_CHOICES.removesuffix(".") + " (or reply yes, session or no)."


def verdict_of_reply(body: str) -> Verdict | None:
    return REPLIES.get(body.strip().strip(".!").lower()) or reaction_verdict(body)


class MatrixApprovals:
    def __init__(self, seats: Seats, post: Post[str, str]) -> None:
        self._asking = Asking[str, str](post, "matrix", seats)
        self._asked: deque[str] = deque(maxlen=256)
        """Questions shown: a late answer to one is swallowed, not a message."""
        self.withdraw_all = self._asking.withdraw_all

    async def ask(self, room_id: str, request: ApprovalRequest) -> ApprovalAnswer:
        view = QuestionView(question(request), CHOICES)
        try:
            return await self._asking.ask(room_id, request, Asking.token(), view)
        finally:
            if view.message_id is not None:
                self._asked.append(view.message_id)

    def answer(self, room_id: str, sender: str, target: str, verdict: Verdict | None) -> bool:
        """True when ``target`` is one of the bot's questions, open or closed."""
        token = self._asking.token_of(room_id, target)
        if token is None:
            return target in self._asked
        self._asking.answer(token, room_id, target, verdict, user=sender, who=sender)
        return True
