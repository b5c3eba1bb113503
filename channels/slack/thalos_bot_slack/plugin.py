"""The Slack channel as it runs: the kit's engine over Slack's wire, and bolt's listeners
over Socket Mode. Bolt acknowledges each envelope once its listener returns, so a
listener only judges the event, keeps it in the ledger and hands the message over; the
turn runs elsewhere. The ledger keeps it until the pump takes it (an acknowledged event
is never sent again): the next start hands over what a stop or a crash left.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import anyio
import structlog
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp

from thalos_bot.channels.delivery.channel import rendering_for
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.intake.catch_up import CatchingUp, catch_up
from thalos_bot.channels.kept import KeptState
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.channels.running import Delivering, Runtime, delivering
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_slack.addressing import Place, ts_mark
from thalos_bot_slack.approvals import SlackApprovals
from thalos_bot_slack.client import (
    build_client,
    check_app_token,
    identify,
    read_tokens,
    socket_mode,
)
from thalos_bot_slack.config import SlackConfig
from thalos_bot_slack.inbound import Admission, Admitted, Ledger, SlackFiles
from thalos_bot_slack.wire import Blocks, SlackWire

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("slack")
TIER_SCALE_ENV = "THALOS_SLACK_TIER_SCALE"
"""Test fakes count Slack's minutes faster; the wire's limits follow (never set in
production)."""


@asynccontextmanager
async def _open(
    config: SlackConfig, host: ChannelHost, *, receive: bool = True
) -> AsyncIterator[ChannelPair]:
    """The channel; without ``receive``, its send-only side (the Web API alone, no
    Socket Mode): what every replica opens to run the turns it holds."""
    tokens = read_tokens()
    client = build_client(tokens[1], config)
    identity = await identify(client)
    who = f"<@{identity['user_id']}> in {identity['team']}"
    ledger = Ledger(KeptState(host.state_dir / "slack-ledger.json", host.connection_state))
    marks = MarkBook(host.marks, CHANNEL)
    if receive:
        await check_app_token(config, tokens[0])
        await ledger.load()
        await marks.load()
    try:
        scale = max(1.0, float(os.environ.get(TIER_SCALE_ENV, "1")))
    except ValueError:
        scale = 1.0
    wire = SlackWire(client, config, identity, scale)
    downloads = SlackFiles(tokens[1], config)
    handler: AsyncSocketModeHandler | None = None
    try:
        async with delivering(
            host,
            config,
            wire,
            rendering_for(wire.limits, "off" if config.streaming == "off" else "edit"),
            parse=Place.parse,
            private=lambda place: place.is_dm,
            approvals=lambda post, seats: SlackApprovals(seats, post),
            files=downloads,
        ) as served:

            async def taken(message: InboundMessage) -> None:
                wire.recipients[message.conversation_id] = message.sender.user
                if receive:
                    await ledger.waiting.taken(message)
                    await marks.taken(message)

            served.inlet.taken = taken
            if not receive:
                yield ChannelPair(served.inlet, served.adapter, f"slack: sending as {who}")
                return
            admission = Admission(config, ledger, identity["user_id"])
            listener = _Listener(admission, wire, served, marks)
            # What was acknowledged before the last stop but never taken (Slack sends it
            # no more) is handed over before any new event, if its sender and channel are
            # still served.
            for event in ledger.waiting.again():
                if (admitted := admission.judge(event)) is not None:
                    listener.take(admitted, event)
            catching = CatchingUp(
                partial(catch_up, CHANNEL, marks, wire.missed, listener.on_event, wire.classify)
            )
            attach, connected = listener.attach, catching.connected
            handler = socket_mode(config, client, tokens, identity, attach, connected=connected)
            served.group.start_soon(marks.run, name="slack-marks")
            served.group.start_soon(catching.run, name="slack-catch-up")
            await handler.connect_async()  # type: ignore[no-untyped-call]
            log.info("slack_connected", team=identity["team_id"], bot=identity["user_id"])
            yield ChannelPair(served.inlet, served.adapter, f"slack: Socket Mode as {who}")
    finally:
        with anyio.CancelScope(shield=True):
            if handler is not None:
                await handler.close_async()  # type: ignore[no-untyped-call]
            # A listener cut short by the stop may not have saved what it took: the
            # envelope was never acknowledged, so Slack sends it again to the next
            # process, which must find it taken.
            if receive:
                await ledger.save()
                await marks.close()  # what was admitted is known to the next start
            await downloads.aclose()


@dataclass(frozen=True, slots=True)
class _Listener:
    """Bolt's listeners: an admitted message goes to the kit's intake (files fetched
    first, in order), a press to the approvals."""

    admission: Admission
    wire: SlackWire
    served: Delivering[Place, Blocks, SlackApprovals]
    marks: MarkBook

    def attach(self, app: AsyncApp) -> None:
        app.event("message")(self.on_event)
        app.event("app_mention")(self.on_event)
        app.action(re.compile(r"^thalos_"))(self.press)
        app.command(self.admission.config.slash_command)(self.slash)

    async def on_event(self, event: dict[str, Any]) -> None:
        admitted = self.admission.judge(event)
        if admitted is None:
            # A message not for the bot (the bot's own, chatter) in a conversation it
            # reads back: the mark passes it, so that no catch-up reads it again (one
            # waiting for the pump is kept in the ledger, not by the mark).
            channel, mark = str(event.get("channel") or ""), ts_mark(str(event.get("ts") or ""))
            if mark is not None and channel in self.marks.known():
                self.marks.note(channel, mark)
            return
        place, ledger = admitted.place, self.admission.ledger
        thread = place.thread_ts if admitted.starts_thread else None
        if not ledger.take(place.channel, admitted.ts, thread=thread):
            log.info("slack_redelivery_ignored", conversation=place.conversation_id)
            return
        self.wire.team_id = self.wire.team_id or admitted.team
        self.take(admitted, event)  # in the order the events came, before the first await
        await ledger.save()  # before bolt acknowledges the envelope

    async def press(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        self.served.approvals.on_action(body)

    async def slash(self, ack: Any, command: dict[str, Any]) -> None:
        user, channel = (str(command.get(key) or "") for key in ("user_id", "channel_id"))
        allowed = user in self.admission.allowed
        if allowed and not channel.startswith("D"):
            await ack(
                text=f"In a channel, type the command in the bot's thread as text, "
                f"e.g. `!new` (or use {self.admission.config.slash_command} in the bot's DM)."
            )
            return
        await ack()  # strangers get nothing
        if allowed:
            words = str(command.get("text") or "").strip()
            self.take(Admitted(Place(channel), user, "", "/" + (words or "help"), ""))

    def take(self, admitted: Admitted, event: dict[str, Any] | None = None) -> None:
        """``event``: kept until the pump takes the message."""
        message = InboundMessage(
            CHANNEL,
            ConversationId(admitted.place.conversation_id),
            self.served.seats.sender(admitted.user, admitted.user),
            admitted.text,
            datetime.now(UTC),
            message_ref=admitted.ts or None,
        )
        if admitted.files or admitted.text:
            if event is not None and (mark := ts_mark(admitted.ts)) is not None:
                self.marks.note_when_taken(admitted.ts, admitted.place.channel, mark)
            self.admission.ledger.waiting.hand(self.served, message, admitted.files, event)


plugin = Runtime(SlackConfig, _open, partial(_open, receive=False))
