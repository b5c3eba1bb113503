"""The Slack channel as the core sees it before it runs (no slack_sdk or bolt import
here): see :mod:`thalos_bot.channels.manifest`."""

from __future__ import annotations

from thalos_bot.channels.admission.allowlist import Seat
from thalos_bot.channels.manifest import Admission, Secret, plug_in
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.addressing import Place
from thalos_bot_slack.config import SlackConfig


def _seat(conversation_id: str) -> Seat[str]:
    """A thread in a channel is allowed while its channel is listed; a DM while anyone is
    allowed (a DM's id does not say whose it is)."""
    place = Place.parse(conversation_id)
    return Seat() if place.is_dm else Seat(group=place.channel)


def _summary(config: SlackConfig) -> str:
    where = config.base_url or "slack.com"
    return (
        f"Socket Mode via {where}: DMs and {len(config.channels)} channel(s) with "
        f"{len(config.allowed_users)} allowed user(s), the first as principal "
        f"{config.principal_id!r}; streaming: {config.streaming}; assistant threads: "
        f"{'on' if config.assistant_threads else 'off'}"
    )


manifest = plug_in(
    "slack",
    SlackConfig,
    _summary,
    admission=Admission(_seat, "Slack", groups_key="channels", group_word="channel"),
    finds="your Slack member id",
    order=30,
    send_side=True,
    secrets=(
        Secret(APP_TOKEN_ENV, "xapp-…, Basic Information → App-Level Tokens"),
        Secret(BOT_TOKEN_ENV, "xoxb-…, OAuth & Permissions"),
    ),
)
