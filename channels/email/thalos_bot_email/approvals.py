"""Tool approvals by reply, on the kit's flow: the question mail lists the choices with
a short code, and the answer is a line such as ``approve 7KQ2`` (the kit checks who
answered; anything else changes nothing)."""

from __future__ import annotations

import re

from thalos_bot.channels.approvals.asking import CLOSED, Asking, Post
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.domain.codes import new_code
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict
from thalos_bot_email.threads import Thread

WORDS: dict[str, Verdict] = {"approve": "approved", "session": "approved-session", "deny": "denied"}
ANSWER = re.compile(r"^\s*(approve|session|deny)\s+([A-Za-z0-9]{4})\b", re.IGNORECASE)


def question(request: ApprovalRequest, code: str) -> str:
    return (
        f"🔐 **Allow this tool call?**\n\n`{request.tool}`\n\n```\n{request.preview}\n```\n\n"
        "Reply to this mail with one line:\n\n"
        f"- `approve {code}` to run it once\n"
        f"- `session {code}` to allow it for the rest of this session\n"
        f"- `deny {code}` to refuse it\n"
    )


class EmailApprovals:
    def __init__(self, post: Post[Thread, None], seats: Seats) -> None:
        self._asking = Asking[Thread, None](post, "email", seats)
        self.withdraw_all = self._asking.withdraw_all

    async def ask(self, thread: Thread, request: ApprovalRequest) -> ApprovalAnswer:
        code = new_code(4)
        view = QuestionView[None](question(request, code), None)
        return await self._asking.ask(thread, request, code, view)

    def answered(self, thread: Thread, text: str, sender: str) -> str | None:
        """None when ``text``'s first line answers no question; else it decides the open
        one its code names, and what to tell the sender is returned: that the question is
        closed, when none is open ("" otherwise)."""
        found = ANSWER.match(text.strip().split("\n", 1)[0])
        if found is None:
            return None
        code, verdict = found.group(2).upper(), WORDS[found.group(1).lower()]
        shown = self._asking.shown_as(code)
        said = self._asking.answer(code, thread, shown, verdict, user=sender, who=sender)
        return said if said == CLOSED else ""
