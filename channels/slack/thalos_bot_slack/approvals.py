"""Tool approvals as Block Kit buttons (:mod:`thalos_bot.channels.approvals.buttons`): a
button's action id names the verdict, its value is the question's token."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thalos_bot.channels.approvals.asking import Post
from thalos_bot.channels.approvals.buttons import Button, ButtonApprovals, ButtonData
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalRequest, Verdict
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.dialect import escape
from thalos_bot_slack.wire import Blocks

DATA = ButtonData(  # a button's action id and value, joined by ":"
    "thalos_{verdict}:{token}",
    {"approved": "approve", "approved-session": "approve_session", "denied": "deny"},
)
STYLES: dict[Verdict, str] = {"approved": "primary", "denied": "danger"}


def question(request: ApprovalRequest) -> str:
    return f"🔐 Allow *{escape(request.tool)}*?\n```{escape(request.preview)}```"


def blocks(text: str, buttons: list[Button]) -> Blocks:
    elements = [
        dict(zip(("action_id", "value"), b.data.split(":"), strict=True))
        | {"type": "button", "text": {"type": "plain_text", "text": b.label}}
        | ({"style": STYLES[b.verdict]} if b.verdict in STYLES else {})
        for b in buttons
    ]
    block = f"thalos_approval_{buttons[0].token}"
    actions = {"type": "actions", "block_id": block, "elements": elements}
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}, actions]


def _object(value: object) -> Mapping[str, Any]:
    """``value`` if a JSON object, else an empty one (a press of another shape: no answer)."""
    return value if isinstance(value, dict) else {}


class SlackApprovals(ButtonApprovals[Place, Blocks]):
    def __init__(self, seats: Seats, post: Post[Place, Blocks]) -> None:
        super().__init__(post, "slack", seats, DATA, question=question, markup=blocks)

    def on_action(self, body: Mapping[str, Any]) -> None:
        """A button press (``block_actions``); never raises."""
        user, box, message = (_object(body.get(k)) for k in ("user", "container", "message"))
        actions = body.get("actions")
        action = _object(actions[0] if isinstance(actions, list) and actions else None)
        self.pressed(
            f"{action.get('action_id')}:{action.get('value')}",  # as DATA joins them
            Place(str(box.get("channel_id")), message.get("thread_ts")),
            str(box.get("message_ts")),
            user=str(user.get("id")),
            who=f"<@{user.get('id')}>",
        )
