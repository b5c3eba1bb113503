"""The Web API client: the SDK's ``AsyncWebClient`` behind one call that paces.

:meth:`SlackApi.call` waits for the method's tier (see :mod:`thalos_bot_slack.limits`),
makes the call, waits out a 429's ``Retry-After`` and tries again, and turns every other
outcome into a value or a typed error (:mod:`thalos_bot_slack.errors`). Nothing here logs
a token or a message's text.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import aiohttp
import structlog
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.config import SlackConfig
from thalos_bot_slack.errors import SlackCallError, SlackInDoubtError
from thalos_bot_slack.limits import TierPacer

log = structlog.get_logger(__name__)

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
MAX_WAITS = 8
"""How many 429s in a row one call waits out before it gives up."""


class MissingTokenError(Exception):
    def __init__(self, name: str, prefix: str) -> None:
        super().__init__(f"{name} is not set (Slack's {prefix}… token)")
        self.name = name


def read_tokens() -> tuple[str, str]:
    """(app token, bot token) from the environment; raises :class:`MissingTokenError`."""
    app = os.environ.get(APP_TOKEN_ENV, "").strip()
    bot = os.environ.get(BOT_TOKEN_ENV, "").strip()
    if not app:
        raise MissingTokenError(APP_TOKEN_ENV, "xapp-")
    if not bot:
        raise MissingTokenError(BOT_TOKEN_ENV, "xoxb-")
    return app, bot


def build_client(token: str | None, config: SlackConfig) -> AsyncWebClient:
    """No retry handlers: the SDK's default one sends a call again after a dropped
    connection, which posts a message twice when only its answer was lost. The channel
    decides itself (see :mod:`thalos_bot_slack.posting`)."""
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
    for name in ("slack_sdk", "slack_bolt", "aiohttp.access"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def sdk_logger() -> logging.Logger:
    """The logger handed to bolt and its Socket Mode client: errors only (bolt warns
    about its own settings at every start, and logs whole tracebacks of a dropped
    socket that the channel rides out)."""
    logger = logging.getLogger("thalos_bot_slack.sdk")
    logger.setLevel(logging.CRITICAL)
    return logger


class SlackApi:
    def __init__(self, client: AsyncWebClient, pacer: TierPacer) -> None:
        self.client = client
        self.pacer = pacer

    async def call(self, method: str, **args: Any) -> dict[str, Any]:
        """Call ``method`` with ``args`` (JSON body); the answer's data on ``ok``."""
        channel = str(args.get("channel") or args.get("channel_id") or "")
        body = {k: v for k, v in args.items() if v is not None}
        for _ in range(MAX_WAITS):
            await self.pacer.acquire(method, channel)
            try:
                if method in JSON_METHODS:
                    response = await self.client.api_call(method, json=body)
                else:
                    response = await self.client.api_call(method, data=_form(body))
            except SlackApiError as exc:
                status = exc.response.status_code
                code = str(exc.response.get("error") or "")
                if status == 429 or code == "ratelimited":
                    retry_after = _retry_after(exc.response.headers)
                    log.info("slack_rate_limited", method=method, retry_after_s=retry_after)
                    self.pacer.blocked(method, channel, retry_after)
                    continue
                if status >= 500:
                    raise SlackInDoubtError(method, f"HTTP {status}") from exc
                raise SlackCallError(method, code or f"HTTP {status}") from exc
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                raise SlackInDoubtError(method, type(exc).__name__) from exc
            data = response.data
            return data if isinstance(data, dict) else {}
        raise SlackCallError(method, "ratelimited")

    async def close(self) -> None:
        session = getattr(self.client, "session", None)
        if isinstance(session, aiohttp.ClientSession):
            await session.close()


def _form(body: dict[str, Any]) -> dict[str, str]:
    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return {key: text(value) for key, value in body.items()}


def _retry_after(headers: Any) -> float:
    raw = None
    if headers is not None:
        for key in ("Retry-After", "retry-after"):
            value = headers.get(key)
            if value is not None:
                raw = value[0] if isinstance(value, list) else value
                break
    try:
        return max(1.0, float(raw)) if raw is not None else 30.0
    except ValueError:
        return 30.0
