"""Registers the Signal channel under the ``thalos_bot.channels`` entry-point group:
the kit's engine, admission, approvals and intake (:func:`~thalos_bot.channels.running.delivering`),
around signal-cli's daemon. Answers go out whole (see :mod:`.wire`), split at Signal's
limit, paced per chat and for the account."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from thalos_bot.channels.approvals.reactions import ReactionApprovals
from thalos_bot.channels.delivery.channel import rendering_for
from thalos_bot.channels.kept import KeptState
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.channels.running import Runtime, delivering
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.config import SignalConfig
from thalos_bot_signal.inbound import Rules
from thalos_bot_signal.intake import SignalFiles
from thalos_bot_signal.ledger import Ledger
from thalos_bot_signal.receiver import Receiver
from thalos_bot_signal.rpc import SignalRpc, read_account
from thalos_bot_signal.text import render
from thalos_bot_signal.wire import SignalWire

LEDGER = "signal-sends.json"


@asynccontextmanager
async def _open(config: SignalConfig, host: ChannelHost) -> AsyncIterator[ChannelPair]:
    rpc = SignalRpc(config.daemon_url, read_account(), timeout=config.request_timeout)
    window = int((config.request_timeout + config.probe_wait) * 1000)
    ledger = Ledger(KeptState(host.state_dir / LEDGER, host.connection_state), window_ms=window)
    await ledger.open()
    wire = SignalWire(rpc, ledger, send_interval=config.send_interval, probe_wait=config.probe_wait)
    files = SignalFiles(rpc)
    async with delivering(
        host,
        config,
        wire,
        rendering_for(wire.limits, "off", (config.backoff_initial, config.backoff_max)),
        parse=Place.parse,
        private=lambda place: place.kind == "dm",
        approvals=lambda post, seats: ReactionApprovals[Place](
            post, "signal", seats, render=render
        ),
        files=files,
    ) as served:
        receiver = Receiver(
            rpc,
            Rules.of(rpc.account, config),
            served,
            files,
            ledger,
            config.reconnecting("signal_events"),
        )
        served.inlet.taken = ledger.waiting.taken  # noted before the pump has it
        served.group.start_soon(receiver.run, name="signal-events")
        yield served.pair(f"signal: signal-cli at {config.daemon_url}", receiver.link)


plugin = Runtime(SignalConfig, _open)
