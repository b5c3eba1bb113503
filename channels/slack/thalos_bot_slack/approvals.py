"""Tool approvals on the kit's one flow (:mod:`thalos_bot.channels.approvals.asking`): Block
Kit buttons valued with the question's token; an allowed user's press on it decides."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thalos_bot.channels.approvals.asking import CHOICES, Asking, Post
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.dialect import escape
from thalos_bot_slack.wire import Blocks

ACTIONS: dict[str, Verdict] = {
    "thalos_approve": "approved",
    "thalos_approve_session": "approved-session",
    "thalos_deny": "denied",
}
STYLES: dict[Verdict, str] = {"approved": "primary", "denied": "danger"}


def blocks(text: str, token: str) -> Blocks:
    buttons = [
        {"type": "button", "action_id": action, "value": token}
        | ({"style": STYLES[verdict]} if verdict in STYLES else {})
        | {"text": {"type": "plain_text", "text": dict(CHOICES)[verdict]}}
        for action, verdict in ACTIONS.items()
    ]
    actions = {"type": "actions", "block_id": f"thalos_approval_{token}", "elements": buttons}
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}, actions]


def _object(value: object) -> Mapping[str, Any]:
    """``value`` if a JSON object, else an empty one (a press of another shape: no answer)."""
    return value if isinstance(value, dict) else {}


class SlackApprovals:
    def __init__(self, seats: Seats, post: Post[Place, Blocks]) -> None:
        self.asking = Asking[Place, Blocks](post, "slack", seats)
        self.withdraw_all = self.asking.withdraw_all

    async def ask(self, place: Place, request: ApprovalRequest) -> ApprovalAnswer:
        token = Asking.token()
        text = f"🔐 Allow *{escape(request.tool)}*?\n```{escape(request.preview)}```"
        return await self.asking.ask(place, request, token, QuestionView(text, blocks(text, token)))

    def on_action(self, body: Mapping[str, Any]) -> None:
        """A button press (``block_actions``); never raises."""
        user, box, message = (_object(body.get(k)) for k in ("user", "container", "message"))
        actions = body.get("actions")
        action = _object(actions[0] if isinstance(actions, list) and actions else None)
        self.asking.answer(
            str(action.get("value")),
            Place(str(box.get("channel_id")), message.get("thread_ts")),
            str(box.get("message_ts")),
            ACTIONS.get(str(action.get("action_id"))),
            user=str(user.get("id")),
            who=f"<@{user.get('id')}>",
        )
