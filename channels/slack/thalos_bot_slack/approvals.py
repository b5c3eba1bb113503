"""Tool approvals on the kit's one flow (:mod:`thalos_bot.channels.approvals.asking`): Block
Kit buttons valued with the question's token; an allowed user's press on it decides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from thalos_bot.channels.approvals.asking import Asking, Post
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.dialect import escape
from thalos_bot_slack.wire import Blocks

log = structlog.get_logger(__name__)

BUTTONS: list[tuple[str, Verdict, str, dict[str, str]]] = [
    ("thalos_approve", "approved", "Approve", {"style": "primary"}),
    ("thalos_approve_session", "approved-session", "Approve for this session", {}),
    ("thalos_deny", "denied", "Deny", {"style": "danger"}),
]
ACTIONS: dict[str, Verdict] = {action: verdict for action, verdict, _, _ in BUTTONS}


def blocks(text: str, token: str) -> Blocks:
    buttons = [
        {"type": "button", "action_id": action, "value": token, **style}
        | {"text": {"type": "plain_text", "text": label}}
        for action, _, label, style in BUTTONS
    ]
    actions = {"type": "actions", "block_id": f"thalos_approval_{token}", "elements": buttons}
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}, actions]


class SlackApprovals:
    def __init__(self, allowed: frozenset[str], post: Post[Place, Blocks]) -> None:
        self.allowed = allowed
        self.asking = Asking[Place, Blocks](post, "slack")

    async def ask(self, place: Place, request: ApprovalRequest) -> ApprovalAnswer:
        token = Asking.token()
        text = f"🔐 Allow *{escape(request.tool)}*?\n```{escape(request.preview)}```"
        return await self.asking.ask(place, request, token, QuestionView(text, blocks(text, token)))

    def on_action(self, body: Mapping[str, Any]) -> None:
        """A button press (``block_actions``); never raises."""
        user, box, message = (body.get(k) or {} for k in ("user", "container", "message"))
        action = (body.get("actions") or [{}])[0]
        if user.get("id") not in self.allowed or not self.asking.decide(
            str(action.get("value")),
            Place(str(box.get("channel_id")), message.get("thread_ts")),
            str(box.get("message_ts")),
            ACTIONS.get(str(action.get("action_id"))),
            who=f"<@{user['id']}>",
            decider=f"slack:{user['id']}",
        ):
            log.info("slack_press_ignored")  # a stranger's, or no open question's own
