"""Registers the Signal channel under the ``thalos_bot.channels`` entry-point group:
the kit's engine, admission, approvals and intake, around signal-cli's daemon."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog
from pydantic import BaseModel

from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.domain.ids import ChannelId
from thalos_bot_signal.adapter import SignalAdapter
from thalos_bot_signal.approvals import SignalApprovals
from thalos_bot_signal.config import SignalConfig
from thalos_bot_signal.inbound import Rules
from thalos_bot_signal.intake import SignalFiles
from thalos_bot_signal.ledger import Ledger
from thalos_bot_signal.receiver import Receiver
from thalos_bot_signal.rpc import SignalRpc, read_account
from thalos_bot_signal.wire import SignalWire

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("signal")
LEDGER = "signal-sends.json"


class SignalPlugin:
    name = "signal"

    @asynccontextmanager
    async def open(self, config: BaseModel, host: ChannelHost) -> AsyncIterator[ChannelPair]:
        assert isinstance(config, SignalConfig)
        account = read_account()
        rpc = SignalRpc(config.daemon_url, account, timeout=config.request_timeout)
        window = int((config.request_timeout + config.probe_wait) * 1000)
        ledger = Ledger(host.state_dir / LEDGER, window_ms=window)
        inlet = Inlet(CHANNEL)
        try:
            async with anyio.create_task_group() as group:
                wire = SignalWire(
                    rpc, ledger, send_interval=config.send_interval, probe_wait=config.probe_wait
                )
                adapter = SignalAdapter(
                    wire,
                    group,
                    channel_id=CHANNEL,
                    backoff=(config.backoff_initial, config.backoff_max),
                )
                seats = host.seats("signal", config)
                approvals = SignalApprovals(adapter.put, seats)
                adapter.asker = approvals.ask
                inlet.stopped = approvals.withdraw_all
                files = SignalFiles(rpc)
                intake = host.intake(
                    inlet, files, group, text_file_max_chars=config.text_file_max_chars
                )
                rules = Rules(
                    account,
                    None,
                    frozenset(config.allowed_users),
                    frozenset(config.groups),
                    config.quote_max_chars,
                )
                receiver = Receiver(
                    rpc,
                    rules,
                    CHANNEL,
                    inlet,
                    intake,
                    files,
                    seats,
                    ledger,
                    approvals,
                    Reconnecting(
                        "signal_events", Backoff(config.backoff_initial, config.backoff_max)
                    ),
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
                if not await adapter.drain_within(config.drain_timeout):
                    log.error(
                        "signal_answers_undelivered_at_shutdown", waited_s=config.drain_timeout
                    )
                group.cancel_scope.cancel()
        finally:
            inlet.close()


plugin = SignalPlugin()
