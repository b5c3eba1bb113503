"""``thalos-bot doctor`` checks for the Slack channel: both tokens, auth.test, and that
Socket Mode will open (apps.connections.open with the app token)."""

from __future__ import annotations

import os

from slack_sdk.errors import SlackApiError

from thalos_bot.channels.checks import Check, skipped, unreachable
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.client import UNANSWERED, build_client, error_code
from thalos_bot_slack.config import SlackConfig

NAME = "Slack auth.test and Socket Mode"
HINTS = {
    "invalid_auth": "copy the token again from the app's settings (OAuth & Permissions, or "
    "Basic Information → App-Level Tokens)",
    "not_allowed_token_type": "the two tokens look swapped: SLACK_APP_TOKEN is the xapp- one",
    "not_authed": "the token is empty",
}


async def _try(token: str, config: SlackConfig, method: str, label: str, env: str) -> Check:
    try:
        data = await build_client(token, config).api_call(method)
    except SlackApiError as exc:
        code = error_code(exc)
        hint = HINTS.get(code, "see Slack's error code above")
        return Check(label, "fail", f"Slack refused {method} with {env}: {code}", hint)
    except UNANSWERED as exc:
        return unreachable(label, config.base_url or "https://slack.com/api/", exc)
    if method == "auth.test":
        return Check(label, "ok", f"bot <@{data.get('user_id')}> in {data.get('team')}")
    return Check(label, "ok", "a Socket Mode URL was issued")


async def slack_checks(config: SlackConfig, *, offline: bool) -> list[Check]:
    if (skip := skipped(NAME, APP_TOKEN_ENV, BOT_TOKEN_ENV, offline=offline)) is not None:
        return [skip]
    app, bot = os.environ[APP_TOKEN_ENV].strip(), os.environ[BOT_TOKEN_ENV].strip()
    return [
        await _try(bot, config, "auth.test", "Slack auth.test", BOT_TOKEN_ENV),
        await _try(app, config, "apps.connections.open", "Slack Socket Mode", APP_TOKEN_ENV),
    ]
