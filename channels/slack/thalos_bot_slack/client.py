"""The Web API client: the SDK's ``AsyncWebClient`` behind one call.

:meth:`SlackApi.call` makes the call (a JSON body or a form, as the method takes) and
returns the answer's data; Slack's refusals are the SDK's ``SlackApiError`` (read with
:func:`error_code`), a call that got no answer is the transport's own error. Pacing,
Retry-After and what a failure means are the delivery engine's and the wire's
(:mod:`thalos_bot_slack.wire`). Nothing here logs a token or a message's text.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient

from thalos_bot.channels.secrets import quiet_loggers, secret_from_env
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV, EXIT_SLACK_CONFIG
from thalos_bot_slack.config import SlackConfig

JSON_METHODS = frozenset(
    {
        "chat.postMessage",
        "chat.update",
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
        "files.completeUploadExternal",
        "assistant.threads.setStatus",
    }
)
"""Methods that take a JSON body; every other one takes a form (Slack ignores JSON
sent to a form-only method such as ``conversations.history``)."""
UNAUTHORIZED = frozenset(
    {"not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired"}
)
UNANSWERED = (TimeoutError, aiohttp.ClientError, OSError, SlackRequestError)
"""A call that got no answer (it may or may not have taken effect)."""


def read_tokens(exit_code: int = EXIT_SLACK_CONFIG) -> tuple[str, str]:
    """(app token, bot token) from the environment, each registered with the log
    redaction; ChannelFatalError (exiting with ``exit_code``) when one is unset."""
    app = secret_from_env(APP_TOKEN_ENV, "slack", "the app-level token (xapp-…)", exit_code)
    bot = secret_from_env(BOT_TOKEN_ENV, "slack", "the bot token (xoxb-…)", exit_code)
    return app, bot


def build_client(token: str | None, config: SlackConfig) -> AsyncWebClient:
    """No retry handlers: the SDK's default one sends a call again after a dropped
    connection, which posts a message twice when only its answer was lost. The channel
    decides itself (see :mod:`thalos_bot_slack.wire`)."""
    kwargs: dict[str, Any] = {
        "timeout": int(max(1, config.request_timeout)),
        "retry_handlers": [],
    }
    if config.base_url is not None:
        kwargs["base_url"] = config.base_url
    return AsyncWebClient(token=token, **kwargs)


def quiet_sdk_loggers() -> None:
    """The SDK logs payloads at DEBUG and whole tracebacks of dropped sockets at ERROR;
    the channel reports what matters as its own events."""
    quiet_loggers(("slack_sdk", "slack_bolt", "aiohttp.access"), logging.CRITICAL)


def sdk_logger() -> logging.Logger:
    """The logger handed to bolt and its Socket Mode client: errors only (bolt warns
    about its own settings at every start, and logs whole tracebacks of a dropped
    socket that the channel rides out)."""
    logger = logging.getLogger("thalos_bot_slack.sdk")
    logger.setLevel(logging.CRITICAL)
    return logger


class SlackApi:
    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def call(self, method: str, **args: Any) -> dict[str, Any]:
        """Call ``method`` with ``args`` (None values left out); the answer's data."""
        body = {k: v for k, v in args.items() if v is not None}
        if method in JSON_METHODS:
            response = await self.client.api_call(method, json=body)
        else:
            response = await self.client.api_call(method, data=_form(body))
        data = response.data
        return data if isinstance(data, dict) else {}

    async def close(self) -> None:
        session = getattr(self.client, "session", None)
        if isinstance(session, aiohttp.ClientSession):
            await session.close()


def error_code(exc: SlackApiError) -> str:
    """Slack's code for a refusal (``channel_not_found``), or the HTTP status."""
    return str(exc.response.get("error") or f"HTTP {exc.response.status_code}")


def _form(body: dict[str, Any]) -> dict[str, str]:
    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return {key: text(value) for key, value in body.items()}
