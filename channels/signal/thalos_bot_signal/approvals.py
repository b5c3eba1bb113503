"""Tool approvals in a Signal chat, which has no buttons: the kit's flow
(:class:`~thalos_bot.channels.approvals.asking.Asking`), the choices listed under the
question, answered by a reaction to it (✅ once, 🔁 for the session, ❌ deny). The kit
decides who may answer (the asking turn's person, or an approver); a reaction to one of
the bot's questions, open or closed, is never a message for the model."""

from __future__ import annotations

from thalos_bot.channels.approvals.asking import Asking, Post
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.text import render

REACTIONS: dict[str, Verdict] = {
    "✅": "approved",
    "👍": "approved",
    "🔁": "approved-session",
    "❌": "denied",
    "👎": "denied",
}
CHOICES = "React ✅ to allow once, 🔁 for this session, ❌ to deny."


class SignalApprovals:
    def __init__(self, post: Post[Place, str], seats: Seats) -> None:
        self._asking = Asking[Place, str](post, "signal", seats)
        self.withdraw_all = self._asking.withdraw_all

    async def ask(self, place: Place, request: ApprovalRequest) -> ApprovalAnswer:
        text = render(f"🔐 Allow **{request.tool}**?\n\n```\n{request.preview}\n```")
        return await self._asking.ask(place, request, Asking.token(), QuestionView(text, CHOICES))

    def react(self, place: Place, user: str, who: str, emoji: str, target: str) -> None:
        token = self._asking.token_of(place, target)
        if token is not None:
            verdict = REACTIONS.get(emoji.replace("\ufe0f", ""))
            self._asking.answer(token, place, target, verdict, user=user, who=who)
