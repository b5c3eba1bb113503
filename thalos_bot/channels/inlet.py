"""A transport's receiving side, handed to the pump: messages and notices in order.

Every transport's receive loop (a long poll, a gateway, a sync, a socket) puts what it
admitted into an :class:`Inlet`, which is the :class:`~thalos_bot.channels.ports.
ChannelSource` the pump reads: messages, and the notices the receiving side has for a
conversation (a file refused, an update it could not read), which the pump delivers
like its own. When the pump stops reading, ``stopped`` runs (stop receiving, so what is
not fetched yet stays with the platform; withdraw the open approval questions, since
no answer can be heard any more). Something handed over after that is dropped, logged.
A source that gets back what the pump never started (a shared inbox) says so with
``redelivers``: its messages are then marked ``redelivered``.

A source that keeps its place in the platform's stream across restarts, and moves it
on only after handing a batch over (Matrix's sync position), gets each message back
through ``taken`` as the pump takes it, and the pump has it only once ``taken``
returned: written down there, it is never handed over again by the next start,
whenever a ``kill -9`` comes. The pump's turn (and its entry in the turn journal,
:mod:`thalos_bot.storage.turn_journal`) begins after that, so a kill mid-turn is told
once and never answered a second time. Such a source also moves its place on only once
the pump took what it handed over (:meth:`Inlet.all_taken`, which the kit's intake
awaits in its ``settled``): a message still waiting here when the pump stops reading
is dropped with the inlet, and must be fetched again by the next start.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING, Literal

import anyio
import structlog

from thalos_bot.channels.ports import InboundMessage, Notice, SourceNotice
from thalos_bot.domain.ids import ChannelId, ConversationId

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

log = structlog.get_logger(__name__)

Arrival = InboundMessage | SourceNotice


class Inlet:
    def __init__(self, channel_id: ChannelId, stopped: Callable[[], None] = lambda: None) -> None:
        self.channel_id = channel_id
        self.stopped = stopped
        """Run once the pump stops reading (set it late if need be)."""
        self._send, self._receive = anyio.create_memory_object_stream[Arrival](math.inf)
        self._dropped = f"{channel_id}_message_dropped_at_shutdown"
        self._read = False
        self._untaken = 0
        self._none_untaken = anyio.Event()
        self._none_untaken.set()
        self.redelivers = False
        """What the pump hands back unstarted is delivered again later (see
        :attr:`InboundMessage.redelivered`)."""
        self.taken: Callable[[InboundMessage], Awaitable[None]] = _nothing
        """Awaited with each message as the pump takes it, before the pump has it (from
        then on it is answered, or told to ask again): a source that must know across a
        restart what went to the pump (Matrix's batch under way) writes it down here.
        Shielded: a stop meanwhile still hands the message over (the pump, stopping,
        tells its sender), as it is written down as taken."""

    def stop_first(self, step: Callable[[], None]) -> None:
        """Run ``step`` as the pump stops reading, before what :attr:`stopped` ran so far
        (stop receiving or taking, then withdraw the open questions)."""
        before = self.stopped

        def stopped() -> None:
            step()
            before()

        self.stopped = stopped

    def receive_until_stopped(
        self, group: TaskGroup, receive: Callable[[], Awaitable[object]], *, name: str
    ) -> None:
        """Run ``receive`` (the transport's poll or sync loop) in ``group`` until the pump
        stops reading (:meth:`stop_first`): what is not fetched yet stays with the
        platform, for the next start."""
        scope = anyio.CancelScope()

        async def receiving() -> None:
            with scope:
                await receive()

        group.start_soon(receiving, name=name)
        self.stop_first(scope.cancel)

    def hand_over(self, arrival: Arrival) -> None:
        if self.redelivers and isinstance(arrival, InboundMessage):
            arrival = dataclasses.replace(arrival, redelivered=True)
        try:
            self._send.send_nowait(arrival)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.info(self._dropped, conversation=arrival.conversation_id)
            return
        if isinstance(arrival, InboundMessage):
            if not self._untaken:
                self._none_untaken = anyio.Event()
            self._untaken += 1

    async def all_taken(self) -> None:
        """Until the pump took (through :attr:`taken`) every message handed over so far.
        Never returns while one is left unread: one the stop leaves here is never
        taken, so a place in the platform's stream kept past it would lose it."""
        while self._untaken:
            await self._none_untaken.wait()

    def notify(
        self,
        conversation_id: ConversationId,
        text: str,
        tone: Literal["info", "warning", "error"] = "info",
    ) -> None:
        """Tell the conversation ``text`` (through the pump, in order)."""
        self.hand_over(SourceNotice(conversation_id, Notice(text, tone)))

    def close(self) -> None:
        """Nothing more will be handed over (and, if the pump never read, nothing is)."""
        self._send.close()
        if not self._read:
            self._receive.close()

    async def messages(self) -> AsyncGenerator[Arrival]:
        self._read = True
        try:
            async with self._receive:
                async for arrival in self._receive:
                    if isinstance(arrival, InboundMessage):
                        with anyio.CancelScope(shield=True):
                            await self.taken(arrival)
                        self._untaken -= 1
                        if not self._untaken:
                            self._none_untaken.set()
                    yield arrival
        finally:
            if self._untaken:
                log.info(self._dropped, untaken=self._untaken)
            self.stopped()


async def _nothing(message: InboundMessage) -> None:
    """A source that keeps no place in the platform's stream notes nothing."""
