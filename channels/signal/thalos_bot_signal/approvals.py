"""Tool approvals in a Signal chat: the kit's flow, answered by a reaction to the
question (:mod:`thalos_bot.channels.approvals.reactions`). The kit decides who may
answer; a reaction is never a message for the model."""

from __future__ import annotations

from thalos_bot.channels.approvals.asking import Asking, Post
from thalos_bot.channels.approvals.reactions import CHOICES, question, reaction_verdict
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.text import render


class SignalApprovals:
    def __init__(self, post: Post[Place, str], seats: Seats) -> None:
        self._asking = Asking[Place, str](post, "signal", seats)
        self.withdraw_all = self._asking.withdraw_all

    async def ask(self, place: Place, request: ApprovalRequest) -> ApprovalAnswer:
        view = QuestionView(render(question(request)), CHOICES)
        return await self._asking.ask(place, request, Asking.token(), view)

    def react(self, place: Place, user: str, who: str, emoji: str, target: str) -> None:
        token = self._asking.token_of(place, target)
        if token is not None:
            verdict = reaction_verdict(emoji)
            self._asking.answer(token, place, target, verdict, user=user, who=who)
