"""From signal-cli's event stream to the pump's inbound messages.

The stream is read for as long as the channel runs: when it ends or fails (the daemon
restarted, the network between them dropped) it is opened again after a backoff, and
the channel's health says so meanwhile. Started with ``--receive-mode=manual`` (see
docs/signal.md), the daemon receives from Signal only while a client reads its events,
so what arrived while the bot was away waits on Signal's servers and comes on the next
connection. Each message timestamp is admitted once per sender (a repeat is dropped).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from thalos_bot.channels.admission.guard import UpdateGuard
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.intake.files import Intake, WithFiles
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.domain.ids import ChannelId
from thalos_bot_signal.approvals import SignalApprovals
from thalos_bot_signal.inbound import Admitted, Reaction, Receipt, Rules
from thalos_bot_signal.intake import SignalFiles
from thalos_bot_signal.ledger import Ledger
from thalos_bot_signal.rpc import (
    ConnectionLostError,
    DaemonDownError,
    RpcError,
    SignalRpc,
    own_uuid,
)

log = structlog.get_logger(__name__)

SEEN_BOUND = 4096


@dataclass
class Receiver:
    rpc: SignalRpc
    rules: Rules
    channel_id: ChannelId
    inlet: Inlet
    intake: Intake
    files: SignalFiles
    seats: Seats
    ledger: Ledger
    approvals: SignalApprovals
    link: Reconnecting
    _seen: OrderedDict[str, None] = field(default_factory=OrderedDict)
    _guard: UpdateGuard = field(default_factory=lambda: UpdateGuard("signal"))

    async def run(self) -> None:
        while True:
            try:
                if self.rules.bot_uuid is None:
                    self.rules = replace(self.rules, bot_uuid=await own_uuid(self.rpc))
                async for event in self.rpc.events(self.link.opened):
                    self.handle(event)
                reason = "the event connection ended"
            except ConnectionLostError:
                reason = "the daemon closed the event connection"
            except (DaemonDownError, RpcError, TimeoutError) as exc:
                reason = f"cannot subscribe: {type(exc).__name__}"
            await self.link.failed(reason)

    def handle(self, event: dict[str, Any]) -> None:
        try:
            read = self.rules.read(event)
        except Exception as exc:  # noqa: BLE001 - one event's shape never ends the stream
            self._guard.failed(exc, conversation=None, notify=None)
            return
        if isinstance(read, Receipt):
            self.ledger.heard(read.who, read.timestamps)
        elif isinstance(read, Reaction):
            self.approvals.react(read.place, read.user, read.display, read.emoji, read.target)
        elif isinstance(read, Admitted) and self._first_time(read.ref):
            self._take(read)

    def _first_time(self, ref: str) -> bool:
        if ref in self._seen:
            log.info("signal_event_replayed")
            return False
        self._seen[ref] = None
        while len(self._seen) > SEEN_BOUND:
            self._seen.popitem(last=False)
        return True

    def _take(self, admitted: Admitted) -> None:
        place = admitted.place
        base = InboundMessage(
            self.channel_id,
            place.conversation,
            self.seats.sender(admitted.user, admitted.display),
            admitted.text,
            admitted.received_at,
            reply_to=admitted.quoted,
            message_ref=admitted.ref,
        )
        if not admitted.files:
            self.intake.pass_text(base)
            return
        where: dict[str, object] = (
            {"groupId": place.id} if place.kind == "group" else {"recipient": admitted.user}
        )
        for file in admitted.files:
            self.files.senders[file.ref] = where
        self.intake.take(WithFiles(base, admitted.files))
