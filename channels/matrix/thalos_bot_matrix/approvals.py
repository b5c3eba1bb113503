"""Tool approvals in a Matrix room, which has no buttons: the kit's
(:mod:`thalos_bot.channels.approvals.reactions`), answered by a reaction to the question
or by a reply to it."""

from __future__ import annotations

from thalos_bot.channels.approvals.reactions import CHOICES as REACTION_CHOICES
from thalos_bot.channels.approvals.reactions import ReactionApprovals, reaction_verdict
from thalos_bot.tools.approval import Verdict

REPLIES: dict[str, Verdict] = {
    **dict.fromkeys(("yes", "y", "ok", "approve"), "approved"),
    **dict.fromkeys(("session", "always"), "approved-session"),
    **dict.fromkeys(("no", "n", "deny"), "denied"),
}
MatrixApprovals = ReactionApprovals[str]
CHOICES = REACTION_CHOICES.removesuffix(".") + " (or reply yes, session or no)."


def verdict_of_reply(body: str) -> Verdict | None:
    return REPLIES.get(body.strip().strip(".!").lower()) or reaction_verdict(body)
