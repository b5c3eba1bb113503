"""Approvals on a platform without buttons (Matrix, Signal): the question in Markdown
with its choices listed under it, answered by a reaction to it."""

from __future__ import annotations

from thalos_bot.tools.approval import ApprovalRequest, Verdict

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
