"""Tool approvals as Block Kit buttons: Approve, Approve for this session, Deny.

The question is one message (a section naming the tool and a short view of its
arguments, then an ``actions`` block). Each button's ``value`` names the question; its
``action_id`` the choice. Only a press by a user in ``allowed_users``, on that very
message in that conversation, decides; anyone else's press is acknowledged and changes
nothing. The message is then edited to say how it ended (which removes the buttons); a
question withdrawn (timeout, ``/cancel``, shutdown) is edited to say it was not run.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from thalos_bot.tools.approval import SHUTDOWN, ApprovalAnswer, ApprovalRequest, Verdict
from thalos_bot_slack.dialect import escape
from thalos_bot_slack.lane import Outcome, Question

log = structlog.get_logger(__name__)

ACTIONS: dict[str, Verdict] = {
    "thalos_approve": "approved",
    "thalos_approve_session": "approved-session",
    "thalos_deny": "denied",
}
OUTCOMES: dict[Verdict, str] = {
    "approved": "✅ Approved",
    "approved-session": "✅ Approved for this session",
    "denied": "⛔ Denied",
}
WITHDRAWN = "⌛ Not answered in time, or cancelled: not run."
SHUT_DOWN = "⏹ Withdrawn: the bot is shutting down. Not run."

Put = Callable[[str, Question | Outcome], None]


def question_text(request: ApprovalRequest) -> str:
    return f"🔐 Allow *{escape(request.tool)}*?\n```{escape(request.preview)}```"


def blocks(text: str, token: str) -> list[dict[str, Any]]:
    def button(label: str, action: str, style: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "button",
            "action_id": action,
            "text": {"type": "plain_text", "text": label},
            "value": token,
        }
        if style is not None:
            out["style"] = style
        return out

    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text}},
        {
            "type": "actions",
            "block_id": f"thalos_approval_{token}",
            "elements": [
                button("Approve", "thalos_approve", "primary"),
                button("Approve for this session", "thalos_approve_session"),
                button("Deny", "thalos_deny", "danger"),
            ],
        },
    ]


@dataclass(slots=True)
class _Open:
    conversation: str
    channel: str
    question: Question
    decided: anyio.Event = field(default_factory=anyio.Event)
    answer: ApprovalAnswer | None = None


class SlackApprovals:
    def __init__(self, allowed: frozenset[str], put: Put) -> None:
        self.allowed = allowed
        self._put = put
        self._open: dict[str, _Open] = {}
        self._stopping = False

    async def ask(
        self, conversation: str, channel: str, request: ApprovalRequest
    ) -> ApprovalAnswer:
        if self._stopping:
            return ApprovalAnswer("denied", SHUTDOWN)
        token = secrets.token_urlsafe(9)
        text = question_text(request)
        question = Question(text, blocks(text, token))
        entry = _Open(conversation, channel, question)
        self._open[token] = entry
        self._put(conversation, question)
        try:
            await question.posted.wait()
            if question.failed:
                log.warning("slack_question_undelivered", tool=request.tool)
                return ApprovalAnswer("denied", "error")
            await entry.decided.wait()
        except anyio.get_cancelled_exc_class():
            question.withdrawn = True
            if entry.answer is None:
                self._put(conversation, Outcome(question, f"{text}\n{WITHDRAWN}"))
            raise
        finally:
            self._open.pop(token, None)
        assert entry.answer is not None
        return entry.answer

    def on_action(self, body: Mapping[str, Any]) -> None:
        """A button press (``block_actions``); never raises."""
        user = body.get("user")
        user_id = user.get("id") if isinstance(user, dict) else None
        if user_id not in self.allowed:
            log.info("slack_press_ignored", reason="sender not allowed")
            return
        actions = body.get("actions")
        action = actions[0] if isinstance(actions, list) and actions else {}
        verdict = ACTIONS.get(str(action.get("action_id"))) if isinstance(action, dict) else None
        entry = self._open.get(str(action.get("value"))) if isinstance(action, dict) else None
        container = body.get("container")
        ts = container.get("message_ts") if isinstance(container, dict) else None
        channel = container.get("channel_id") if isinstance(container, dict) else None
        if (
            verdict is None
            or entry is None
            or entry.answer is not None
            or channel != entry.channel
            # The token is the question's own (random, only in its buttons); a press may
            # beat the answer to the post that showed them, before its ts is known.
            or (entry.question.ts is not None and ts != entry.question.ts)
        ):
            log.info("slack_press_ignored", reason="question closed or not this message")
            return
        entry.answer = ApprovalAnswer(verdict, f"slack:{user_id}")
        entry.decided.set()
        self._put(
            entry.conversation,
            Outcome(entry.question, f"{entry.question.text}\n{OUTCOMES[verdict]} by <@{user_id}>."),
        )

    def withdraw_all(self) -> None:
        self._stopping = True
        for entry in list(self._open.values()):
            if entry.answer is not None:
                continue
            entry.answer = ApprovalAnswer("denied", SHUTDOWN)
            entry.question.withdrawn = True
            entry.decided.set()
            self._put(
                entry.conversation, Outcome(entry.question, f"{entry.question.text}\n{SHUT_DOWN}")
            )
