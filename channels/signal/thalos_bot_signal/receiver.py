"""From signal-cli's event stream to the pump's inbound messages.

The stream is opened again after a backoff whenever it ends or fails, the channel's
health saying so meanwhile. With ``--receive-mode=manual`` (docs/signal.md) what arrives
while nobody reads waits on Signal's servers for the next subscription. A message
(its timestamp and sender) is admitted once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import structlog

from thalos_bot.channels.admission.guard import UpdateGuard
from thalos_bot.channels.admission.seen import Seen
from thalos_bot.channels.approvals.reactions import ReactionApprovals, reaction_verdict
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.channels.running import Delivering
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.inbound import Admitted, Reaction, Receipt, Rules
from thalos_bot_signal.intake import SignalFiles
from thalos_bot_signal.ledger import Ledger
from thalos_bot_signal.rpc import FAILED, ConnectionLostError, SignalRpc, own_uuid
from thalos_bot_signal.wire import Controls

log = structlog.get_logger(__name__)


@dataclass
class Receiver:
    rpc: SignalRpc
    rules: Rules
    served: Delivering[Place, Controls, ReactionApprovals[Place]]
    """The channel's inlet, intake, seats and approvals."""
    files: SignalFiles
    ledger: Ledger
    link: Reconnecting
    _seen: Seen = field(default_factory=Seen)
    _guard: UpdateGuard = field(default_factory=lambda: UpdateGuard("signal"))

    async def run(self) -> None:
        while True:
            try:
                if self.rules.bot_uuid is None:
                    self.rules = replace(self.rules, bot_uuid=await own_uuid(self.rpc))
                    # What the last process received and the pump never took (signal-cli
                    # hands a message out once), before anything new, read as it was (a
                    # mention of the bot included): held again if still admitted.
                    for held in self.ledger.waiting.again():
                        await self.handle(held)
                async for event in self.rpc.events(self.link.opened):
                    await self.handle(event)
                reason = "the event connection ended"
            except ConnectionLostError:
                reason = "the daemon closed the event connection"
            except FAILED as exc:
                reason = f"cannot subscribe: {type(exc).__name__}"
            await self.link.failed(reason)

    async def handle(self, event: dict[str, Any]) -> None:
        try:
            read = self.rules.read(event)
        except Exception as exc:  # noqa: BLE001 - one event's shape never ends the stream
            self._guard.failed(exc, conversation=None, notify=None)
            return
        if isinstance(read, Receipt):
            await self.ledger.heard(read.who, read.timestamps)
        elif isinstance(read, Reaction):
            verdict = reaction_verdict(read.emoji)
            self.served.approvals.answer(
                read.place, read.target, verdict, user=read.user, who=read.display
            )
        elif isinstance(read, Admitted):
            if self._seen.first_time(read.ref):
                self._take(read, event)
                await self.ledger.waiting.save()
            else:
                log.info("signal_event_replayed")

    def _take(self, admitted: Admitted, event: dict[str, Any]) -> None:
        place = admitted.place
        base = InboundMessage(
            self.served.inlet.channel_id,
            place.conversation,
            self.served.seats.sender(admitted.user, admitted.display),
            admitted.text,
            admitted.received_at,
            reply_to=admitted.quoted,
            message_ref=admitted.ref,
        )
        where = {"groupId": place.id} if place.kind == "group" else {"recipient": admitted.user}
        for file in admitted.files:
            self.files.senders[file.ref] = where
        self.ledger.waiting.hand(self.served, base, admitted.files, event)
