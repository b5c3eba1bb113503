"""Registers the Signal channel under the ``thalos_bot.channels`` entry-point group:
the kit's engine, admission, approvals and intake, around signal-cli's daemon. Answers
go out whole (see :mod:`.wire`), split at Signal's limit, paced per chat and for the
account."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from pydantic import BaseModel

from thalos_bot.channels.approvals.reactions import ReactionApprovals
from thalos_bot.channels.delivery.channel import WireAdapter, rendering_for
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.kept import KeptState
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.domain.ids import ChannelId
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.config import SignalConfig
from thalos_bot_signal.inbound import Rules
from thalos_bot_signal.intake import SignalFiles
from thalos_bot_signal.ledger import Ledger
from thalos_bot_signal.receiver import Receiver
from thalos_bot_signal.rpc import SignalRpc, read_account
from thalos_bot_signal.text import render
from thalos_bot_signal.wire import Controls, SignalWire

CHANNEL = ChannelId("signal")
LEDGER = "signal-sends.json"


class SignalPlugin:
    name = "signal"

    @asynccontextmanager
    async def open(self, config: BaseModel, host: ChannelHost) -> AsyncIterator[ChannelPair]:
        assert isinstance(config, SignalConfig)
        rpc = SignalRpc(config.daemon_url, read_account(), timeout=config.request_timeout)
        window = int((config.request_timeout + config.probe_wait) * 1000)
        kept = KeptState(host.state_dir / LEDGER, host.connection_state)
        ledger = Ledger(kept, window_ms=window)
        await ledger.open()
        backoff = (config.backoff_initial, config.backoff_max)
        inlet = Inlet(CHANNEL)
        try:
            async with anyio.create_task_group() as group:
                wire = SignalWire(
                    rpc, ledger, send_interval=config.send_interval, probe_wait=config.probe_wait
                )
                adapter = WireAdapter[Place, Controls](
                    wire,
                    group,
                    rendering_for(wire.limits, "off", backoff),
                    channel_id=CHANNEL,
                    parse=lambda conversation: (Place.parse(conversation), None),
                    private=lambda place: place.kind == "dm",
                )
                seats = host.seats("signal", config)
                approvals = ReactionApprovals[Place](adapter.put, "signal", seats, render=render)
                adapter.asker = approvals.ask
                inlet.stopped = approvals.withdraw_all
                files = SignalFiles(rpc)
                limit = config.text_file_max_chars
                intake = host.intake(inlet, files, group, text_file_max_chars=limit)
                rules = Rules.of(rpc.account, config)
                receiver = Receiver(
                    rpc,
                    rules,
                    inlet,
                    intake,
                    files,
                    seats,
                    ledger,
                    approvals,
                    Reconnecting("signal_events", Backoff(*backoff)),
                )
                group.start_soon(receiver.run, name="signal-events")
                yield ChannelPair(
                    inlet,
                    adapter,
                    f"signal: signal-cli at {config.daemon_url}",
                    receiving=receiver.link.receiving,
                    retrying=receiver.link.retrying,
                    health=receiver.link.health,
                )
                await adapter.drain_at_shutdown(config.drain_timeout)
                group.cancel_scope.cancel()
        finally:
            inlet.close()


plugin = SignalPlugin()
