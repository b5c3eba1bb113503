"""``thalos-bot slack pair``: find the owner's Slack member id with a one-time code.

It connects over Socket Mode as the app, prints a code (the kit's :class:`PairingCode`:
single use, ten minutes) and waits for a direct message to the bot holding it; nobody is
answered meanwhile, and every envelope is acknowledged, so Slack redelivers nothing to
the daemon later. The sender is shown and, once confirmed (``--yes``: at once), added to
``allowed_users`` in ``bot.toml`` (comments kept) with the section turned on; they are
told in the DM.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from thalos_bot.channels.admission.pair_command import (
    EXIT_CONFIG,
    EXIT_NOT_ADDED,
    PAIRED,
    Ask,
    Show,
    confirm_and_add,
    expired,
    section_while_pairing,
    show_line,
)
from thalos_bot.channels.admission.pairing import CODE_TTL, PairingCode
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.config.loader import ConfigError
from thalos_bot_slack.client import (
    UNANSWERED,
    MissingTokenError,
    SlackApi,
    build_client,
    quiet_sdk_loggers,
    read_tokens,
    sdk_logger,
)
from thalos_bot_slack.config import SlackConfig
from thalos_bot_slack.plugin import authorizer, check_app_token, identify


@dataclass(frozen=True, slots=True)
class Person:
    user: str
    channel: str


def heard_code(event: dict[str, Any], code: PairingCode) -> Person | None:
    """The sender, when ``event`` is a person's direct message holding the code."""
    if event.get("channel_type") != "im" or event.get("bot_id") or event.get("subtype"):
        return None
    user, channel = event.get("user"), event.get("channel")
    if not isinstance(user, str) or not isinstance(channel, str):
        return None
    return Person(user, channel) if code.redeem(str(event.get("text") or "")) else None


async def pair(
    path: Path, *, yes: bool, ask: Ask | None, show: Show = show_line, ttl: float = CODE_TTL
) -> int:
    try:
        config = section_while_pairing(path, SlackConfig, "slack")
        app_token, bot_token = read_tokens()
    except (ConfigError, MissingTokenError) as exc:
        show(f"error: {exc}")
        return EXIT_CONFIG
    quiet_sdk_loggers()
    client = build_client(bot_token, config)
    api = SlackApi(client)
    handler: AsyncSocketModeHandler | None = None
    try:
        try:
            identity = await identify(api)
            await check_app_token(config, app_token)
        except ChannelFatalError as exc:
            show(f"error: {exc.message}")
            return EXIT_CONFIG
        code = PairingCode(ttl=ttl)
        found: list[Person] = []
        heard = anyio.Event()
        app = AsyncApp(
            client=client,
            logger=sdk_logger(),
            authorize=authorizer(identity, bot_token),
            ignoring_self_events_enabled=True,
        )

        async def on_message(event: dict[str, Any]) -> None:
            person = None if heard.is_set() else heard_code(event, code)
            if person is not None:
                found.append(person)
                heard.set()

        app.event("message")(on_message)
        handler = AsyncSocketModeHandler(
            app,
            app_token,
            logger=sdk_logger(),
            web_client=AsyncWebClient(
                base_url=config.base_url or AsyncWebClient.BASE_URL,
                timeout=int(max(1, config.request_timeout)),
            ),
            ping_interval=config.ping_interval,
        )
        await handler.connect_async()  # type: ignore[no-untyped-call]
        show(
            f"Send this code to <@{identity['user_id']}> in a direct message within "
            f"{round(ttl / 60) or 1} minutes:"
        )
        show(f"\n    {code.shown}\n")
        with anyio.move_on_after(code.remaining):
            await heard.wait()
        if not found:
            show(expired("slack"))
            return EXIT_NOT_ADDED
        person = found[0]
        if not await confirm_and_add(
            path,
            person.user,
            channel="slack",
            title="Slack",
            described=f"member {person.user}",
            yes=yes,
            ask=ask,
            show=show,
        ):
            return EXIT_NOT_ADDED
        try:
            await api.call("chat.postMessage", channel=person.channel, text=PAIRED)
        except (SlackApiError, *UNANSWERED):
            show("(Telling them in the DM failed; the pairing stands.)")
        return 0
    finally:
        with anyio.CancelScope(shield=True):
            if handler is not None:
                await handler.close_async()  # type: ignore[no-untyped-call]
            await api.close()
