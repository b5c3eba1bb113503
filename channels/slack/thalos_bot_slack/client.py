"""Slack's two connections: the Web API client (the SDK's ``AsyncWebClient``) and bolt's
app over Socket Mode, both opened from here for the channel and for ``pair``.

Slack's refusals are the SDK's ``SlackApiError`` (read with :func:`error_code`); a call
that got no answer is the transport's own error (:data:`UNANSWERED`). What a failure
means is the wire's. Nothing here logs a token or a message's text. The SDK's client
opens a session per call when it is given none, so there is nothing to close.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import aiohttp
import structlog
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient

from thalos_bot.channels.ports import EXIT_UNAUTHORIZED, ChannelFatalError
from thalos_bot.channels.secrets import quiet_loggers, secret_from_env
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.config import SlackConfig

log = structlog.get_logger(__name__)

UNAUTHORIZED = frozenset(
    {"not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired"}
)
UNANSWERED = (TimeoutError, aiohttp.ClientError, OSError, SlackRequestError)
"""A call that got no answer (it may or may not have taken effect)."""


def read_tokens() -> tuple[str, str]:
    """(app token, bot token) from the environment, each registered with the log
    redaction; ChannelFatalError (a configuration error) when one is unset."""
    app = secret_from_env(APP_TOKEN_ENV, "slack", "the app-level token (xapp-…)")
    bot = secret_from_env(BOT_TOKEN_ENV, "slack", "the bot token (xoxb-…)")
    return app, bot


def build_client(token: str | None, config: SlackConfig) -> AsyncWebClient:
    """No retry handlers: the SDK's default one sends a call again after a dropped
    connection, which posts a message twice when only its answer was lost. The channel
    decides itself (see :mod:`thalos_bot_slack.wire`)."""
    # The SDK logs payloads at DEBUG and whole tracebacks of dropped sockets at ERROR;
    # the channel reports what matters as its own events.
    quiet_loggers(("slack_sdk", "slack_bolt", "aiohttp.access"), logging.CRITICAL)
    return AsyncWebClient(
        token=token,
        base_url=config.base_url or AsyncWebClient.BASE_URL,
        timeout=int(max(1, config.request_timeout)),
        retry_handlers=[],
    )


def error_code(exc: SlackApiError) -> str:
    """Slack's code for a refusal (``channel_not_found``), or the HTTP status."""
    return str(exc.response.get("error") or f"HTTP {exc.response.status_code}")


async def identify(client: AsyncWebClient) -> dict[str, str]:
    try:
        data = await client.auth_test()
    except SlackApiError as exc:
        if (code := error_code(exc)) in UNAUTHORIZED:
            raise ChannelFatalError(
                f"Slack rejected the bot token in {BOT_TOKEN_ENV} ({code})",
                EXIT_UNAUTHORIZED,
            ) from None
        raise ChannelFatalError(f"Slack refused auth.test ({code})", 1) from None
    except UNANSWERED as exc:
        raise ChannelFatalError(f"cannot reach Slack ({type(exc).__name__})", 1) from None
    return {key: str(data.get(key) or "") for key in ("user_id", "team_id", "team", "bot_id")}


async def check_app_token(config: SlackConfig, app_token: str) -> None:
    """The SDK's Socket Mode client retries a refused connection forever, silently; a
    wrong app token is said once, here, and stops the daemon."""
    try:
        await build_client(None, config).apps_connections_open(app_token=app_token)
    except SlackApiError as exc:
        if (code := error_code(exc)) in {*UNAUTHORIZED, "not_allowed_token_type"}:
            raise ChannelFatalError(
                f"Slack rejected the app token in {APP_TOKEN_ENV} ({code}); it is the "
                "xapp- token with connections:write, and Socket Mode must be on",
                EXIT_UNAUTHORIZED,
            ) from None
        log.warning("slack_app_token_not_checked", error=code)
    except UNANSWERED as exc:
        log.warning("slack_app_token_not_checked", error=type(exc).__name__)


def socket_mode(
    config: SlackConfig,
    client: AsyncWebClient,
    tokens: tuple[str, str],
    identity: dict[str, str],
    attach: Callable[[AsyncApp], object],
    *,
    connected: Callable[[], object] = lambda: None,
) -> AsyncSocketModeHandler:
    """Bolt's app, its listeners attached by ``attach``, behind a Socket Mode handler
    not yet connected, which calls ``connected()`` at each ``hello`` (a connection
    opened, at the start or a reconnect). Bolt would call auth.test on the first events
    (several at once after a reconnect, a burst Slack may answer 429); the channel
    already knows who it is, so its authorizer only answers that."""
    # Bolt's and its Socket Mode client's logger, held quiet by build_client (bolt warns
    # about its own settings at every start, and logs whole tracebacks of a dropped socket).
    quiet = logging.getLogger("slack_bolt")

    async def authorize(**_: Any) -> AuthorizeResult:
        return AuthorizeResult(
            enterprise_id=None,
            team_id=identity["team_id"],
            team=identity["team"],
            bot_user_id=identity["user_id"],
            bot_id=identity["bot_id"] or None,
            bot_token=tokens[1],
        )

    app = AsyncApp(
        client=client,
        logger=quiet,
        authorize=authorize,
        ignoring_self_events_enabled=True,
    )
    attach(app)
    handler = AsyncSocketModeHandler(
        app,
        tokens[0],
        logger=quiet,
        web_client=AsyncWebClient(
            base_url=config.base_url or AsyncWebClient.BASE_URL,
            timeout=int(max(1, config.request_timeout)),
        ),
        ping_interval=config.ping_interval,
    )

    async def hello(_client: object, message: dict[str, Any], _raw: str | None) -> None:
        if message.get("type") == "hello":
            connected()

    handler.client.message_listeners.append(hello)
    return handler
