"""Channels that hold a platform connection, on replicas: open on one of them at a time.

A Discord gateway session, a Slack Socket Mode connection, a Matrix sync loop and a
Telegram long poll each receive every event: two replicas holding one each would answer
everything twice. With a PostgreSQL store, the host therefore opens such a channel only
while this replica holds the channel's connection lease
(:class:`~thalos_bot.cluster.connections.ConnectionLease`); the other replicas stand by
and open it when they win the lease. A :class:`Standby` does that for one channel:

- it tries to take the lease (at start-up once, before the host goes on, so the owner
  starts exactly as a single process does; then every ``poll_every`` seconds);
- holding it, it opens the channel, hands it to the host (``attach``: the pump, the
  outbox and the scheduler use it from then on), renews the lease every third of its
  span, and forwards what the channel receives to the pump through :attr:`source`,
  which stays the same across owners;
- a lost lease (another replica took it after this one stalled), a renewal overdue by
  this process's own clock, or the host stopping closes the channel at once (``detach``
  first); a clean stop releases the lease so a standby takes it at its next try;
- a fenced write of the channel's refused (the kit's ``ConnectionLostError``: Matrix's
  keys written as its encryption starts) is a lost lease too, while it opens as well:
  this replica stands by again (at start-up too, where a failure to open stops it).

Nothing the channel receives while this replica is not sure it holds the lease reaches
the pump: the new owner's own connection receives it too. A message with the platform's
id goes through the shared inbox (:mod:`thalos_bot.cluster.connection_inbox`): stored
once whatever delivers it again, then taken from there, in arrival order, with what an
earlier owner stored and never finished. The chats' 429 waits are shared with the next
owner (:mod:`thalos_bot.cluster.connection_holds`).

A channel whose plug-in sends without its connection (Slack, Discord, Matrix) is given an
:class:`~thalos_bot.service.anywhere.Anywhere`: then the connection open here only
stores what it receives, and every replica runs the conversations whose lease it holds
with its own send-only side; the host attaches nothing when the connection moves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Literal, TypeAlias

import anyio
import psycopg
import structlog
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream

from thalos_bot.channels.connection_state import ConnectionLostError
from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.inbound_codec import decode, encode
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.ports import ChannelFatalError, InboundMessage, SourceNotice
from thalos_bot.channels.registry import ChannelPair
from thalos_bot.cluster.connection_holds import EVERYWHERE, ConnectionHolds
from thalos_bot.cluster.connection_inbox import ConnectionInbox, Waiting
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.domain.ids import ChannelId
from thalos_bot.domain.wrapped import found_in
from thalos_bot.service.anywhere import Anywhere, obey_stored
from thalos_bot.service.connection_plugins import holds_connection

__all__ = ["Received", "Relay", "Standby", "holds_connection"]
"""``holds_connection`` is read from here by the transports' setup tests too."""

log = structlog.get_logger(__name__)

Received: TypeAlias = InboundMessage | SourceNotice
OPENING_SPANS = 5
"""Spans of the connection lease an opening may take while the lease is kept for it."""
DRAIN_EVERY = 1.0
"""Seconds between two looks at the inbox when nothing arrived here (rows an earlier
owner left are found at once, on opening)."""


class Relay:
    """The pump's source for a channel whose connection moves between replicas: what
    the channel open here receives, whichever opening of it that is."""

    def __init__(self, channel_id: ChannelId, receive: MemoryObjectReceiveStream[Received]):
        self.channel_id = channel_id
        self._receive = receive
        self.read = False

    async def messages(self) -> AsyncIterator[Received]:
        self.read = True
        with self._receive:
            async for message in self._receive:
                yield message

    def close(self) -> None:
        """At the end, when nobody read it (a host whose pump never ran)."""
        if not self.read:
            self._receive.close()


class Standby:
    """One channel's connection, held by this replica while it holds the lease."""

    def __init__(
        self,
        channel_id: ChannelId,
        open_channel: Callable[[], AbstractAsyncContextManager[ChannelPair]],
        lease: ConnectionLease,
        inbox: ConnectionInbox | None = None,
        holds: ConnectionHolds | None = None,
        *,
        anywhere: Anywhere | None = None,
    ) -> None:
        self.channel_id = channel_id
        self.anywhere = anywhere
        """The channel's turns run by any replica (:mod:`thalos_bot.service.anywhere`):
        the connection, open here, only stores what it receives; the host keeps the
        channel's send-only side, not this pair."""
        self._open = open_channel
        self.lease = lease
        self.inbox = inbox
        """Where received messages wait until they are run (None: handed on directly,
        deduplicated by their platform id only)."""
        self._arrived = anyio.Event()
        self.holds = holds
        """The chats' 429 waits, shared with the next owner (None: kept here only)."""
        self._told: list[tuple[str, float]] = []
        self._heard = anyio.Event()
        self.pair: ChannelPair | None = None
        """The channel while it is open here."""
        self._send, receive = anyio.create_memory_object_stream[Received](0)
        self._receive = receive
        """The :class:`Relay`'s end (closed by it), or unread with an :class:`Anywhere`."""
        self._pump_gone = False
        self.source: Relay | Inlet = (
            Relay(channel_id, receive) if anywhere is None else anywhere.inlet
        )
        if anywhere is not None:
            anywhere.book.owns = lambda: self.pair is not None and self.lease.fresh()
        self._stopping = anyio.Event()
        self._check = anyio.Event()
        self._served = anyio.Event()
        self._attach: Callable[[ChannelPair], Awaitable[None]] | None = None
        self._pump_stopping: Callable[[], bool] = lambda: False
        self._detach: Callable[[ChannelPair], None] | None = None
        self._status: TaskStatus[ChannelPair | None] | None = None
        self._direct = False
        """Whether the inbox's last look found nothing waiting: then a message received
        is stored already taken and handed on at once, not through the drain."""
        self._finishing: TaskGroup | None = None
        """While the connection is held: the drain's group, where a message handed on
        waits for the pump to deal with it (cancelled when the connection closes)."""

    def serve(
        self,
        attach: Callable[[ChannelPair], Awaitable[None]],
        detach: Callable[[ChannelPair], None],
        stopping: Callable[[], bool] = lambda: False,
    ) -> None:
        """How the host takes the channel in and lets it go, and whether its pump is
        stopping (a message it handles then may have been left for redelivery, so its
        inbox row stays for the next owner); a channel won before this (during start-up)
        waits for it."""
        self._attach, self._detach = attach, detach
        self._pump_stopping = stopping
        self._served.set()

    def stop(self) -> None:
        """Close the channel (if open here), release the lease, and end :meth:`run`."""
        self._stopping.set()
        self._check.set()

    async def run(self, *, task_status: TaskStatus[ChannelPair | None]) -> None:
        """Until :meth:`stop`. Started with the pair open here, or None (standing by);
        a failure to open it at start-up is raised, as for any channel."""
        self._status = task_status
        try:
            while not self._stopping.is_set():
                if await self._take():
                    await self._hold()
                elif self._status is not None:
                    self._status.started(None)
                    self._status = None
                    log.info("connection_standby", channel=self.channel_id)
                await self._pause(self.lease.poll_every)
        finally:
            with anyio.CancelScope(shield=True):
                await self._release()
            self._send.close()
            if self.anywhere is not None:
                self._receive.close()  # the Relay's end, unread: turns run on any replica
            self.source.close()

    async def _take(self) -> bool:
        try:
            return await self.lease.acquire()
        except Exception as exc:
            if self._status is not None:
                raise
            log.warning("connection_lease_take_failed", channel=self.channel_id, error=str(exc))
            return False

    async def _hold(self) -> None:
        """Open the channel and keep it until the lease is lost or the host stops.

        What the channel receives is read until its source ends, after it closed (not
        only until the lease is let go): with an inbox, a message the platform counts as
        delivered while the channel closes is stored for the next owner, not dropped."""
        try:
            async with anyio.create_task_group() as receiving:
                await self._open_and_keep(receiving)
        except BaseExceptionGroup as group:
            raise _sole(group) from None

    async def _open_and_keep(self, receiving: TaskGroup) -> None:
        opening = True
        renewing = anyio.CancelScope()  # while it opens (Matrix's keys take a while)
        receiving.start_soon(self._renew_while_opening, renewing)
        try:
            async with self._open() as pair:
                if self.anywhere is None:
                    await self._obey_holds(pair)  # before the pending finals go out
                if self._status is not None:
                    self._status.started(pair)  # the host attaches it with the others
                    self._status = None
                elif self.anywhere is None:
                    await self._served.wait()
                    assert self._attach is not None
                    await self._attach(pair)
                opening = False
                log.info("connection_opened", channel=self.channel_id, token=self.lease.token)
                self.pair = pair
                if self.anywhere is not None:
                    await self._receive_only(receiving, renewing, pair)
                    return
                try:
                    receiving.start_soon(self._forward, pair)
                    async with anyio.create_task_group() as group:
                        self._finishing = group
                        if self.inbox is not None:
                            group.start_soon(self._drain, self.inbox, group)
                        if self.holds is not None:
                            group.start_soon(self._share_holds, self.holds)
                        renewing.cancel()  # from here on, by _keep
                        await self._keep()
                        self._direct, self._finishing = False, None
                        group.cancel_scope.cancel()
                finally:
                    self._direct, self._finishing = False, None
                    self.pair = None
                    if self._detach is not None:
                        self._detach(pair)
                    log.info("connection_closed", channel=self.channel_id)
        except Exception as exc:
            renewing.cancel()
            lost = found_in(exc, ConnectionLostError)
            if lost is not None:
                await self._lost(lost, opening=opening)
                return
            if self._status is not None or not opening:
                with anyio.CancelScope(shield=True):
                    await self._release()
                raise  # as for any channel: the daemon stops, another replica takes over
            # Opening failed on a takeover (e.g. Telegram still sees the dead owner's
            # poll): give the lease back and try again after a span.
            fatal = found_in(exc, ChannelFatalError)
            if fatal is not None:  # a sentence, not a bug
                log.warning("connection_open_refused", channel=self.channel_id, why=fatal.message)
            else:
                log.exception("connection_open_failed", channel=self.channel_id)
            await self._release()
            await self._pause(self.lease.span.total_seconds())

    async def _lost(self, exc: ConnectionLostError, *, opening: bool) -> None:
        """The channel's fenced write was refused (Matrix's keys, as its encryption
        starts): another replica took the lease after this one stalled past it. Not a
        failure of the channel: this replica stands by again, at start-up too (the host
        goes on without the channel), and takes the lease at a later try."""
        log.warning(
            "connection_lost_while_opening" if opening else "connection_lost",
            channel=self.channel_id,
            why=str(exc),
        )
        with anyio.CancelScope(shield=True):
            await self._release()  # fenced: only this replica's token is let go
        if self._status is not None:
            self._status.started(None)
            self._status = None
            log.info("connection_standby", channel=self.channel_id)

    async def _receive_only(
        self, receiving: TaskGroup, renewing: anyio.CancelScope, pair: ChannelPair
    ) -> None:
        """Hold the connection, storing what it receives, until the lease is lost or the
        host stops (the turns run wherever their conversation's lease is held). The
        owner-only rows an earlier owner left are looked at once, here alone."""
        assert self.anywhere is not None
        self.anywhere.connection_taken()
        try:
            receiving.start_soon(self._forward, pair)
            renewing.cancel()  # from here on, by _keep
            await self._keep()
        finally:
            self.pair = None
            log.info("connection_closed", channel=self.channel_id)

    async def _renew_while_opening(self, scope: anyio.CancelScope) -> None:
        """Renew the lease until ``scope`` is cancelled, once the channel is open (or
        failed to open): an opening longer than the lease must not lose it. Not past
        :data:`OPENING_SPANS` spans of the lease, though: an opening that hangs (this
        replica cannot reach the platform, and retries) then lets the lease run out, so
        a replica that can reach it takes the connection over."""
        with scope:
            for _ in range(OPENING_SPANS * 3):  # renewed every third of a span
                await anyio.sleep(self.lease.renew_every)
                try:
                    if not await self.lease.renew():
                        return  # fenced: the channel closes once it is open
                except (psycopg.Error, OSError) as exc:
                    log.warning(
                        "connection_lease_renew_failed", channel=self.channel_id, error=str(exc)
                    )
            log.warning("connection_opening_slow", channel=self.channel_id, spans=OPENING_SPANS)

    async def _keep(self) -> None:
        """Renew the lease every third of its span; return once it is lost, no longer
        sure, or the host stops."""
        while True:
            with anyio.move_on_after(self.lease.renew_every):
                await self._check.wait()
            if self._stopping.is_set():
                return
            self._check = anyio.Event()
            try:
                if not await self.lease.renew():
                    return  # fenced: another replica holds it now
            except (psycopg.Error, OSError) as exc:
                log.warning(
                    "connection_lease_renew_failed", channel=self.channel_id, error=str(exc)
                )
            if not self.lease.fresh():
                log.warning("connection_lease_unsure", channel=self.channel_id)
                self.lease.token = None
                return

    async def _forward(self, pair: ChannelPair) -> None:
        async for message in pair.source.messages():
            if self.anywhere is not None:
                await self._store_anywhere(self.anywhere, message)
                continue
            if await self._left_if_unsure(message):
                continue
            if isinstance(message, InboundMessage) and message.message_ref is not None:
                if self.inbox is not None and await self._stored(self.inbox, message):
                    continue  # the drain hands it on (or it was received before)
                if await self._left_if_unsure(message):  # a stall while it was stored
                    continue
                if not await self._first_sight(message):
                    log.info(
                        "connection_message_seen_before",
                        channel=self.channel_id,
                        conversation=message.conversation_id,
                        ref=message.message_ref,
                    )
                    continue
            await self._hand_on(message)  # after the pump stopped: stored above, or dropped
        log.info("connection_source_ended", channel=self.channel_id)

    async def _left_if_unsure(self, message: Received) -> bool:
        """True when a stall ran the lease out (one during a store too: the server ended
        that transaction): then ``message`` is left for the next owner, not pumped here."""
        if self.lease.fresh():
            return False
        self._check.set()
        await self._leave_for_next(message)
        return True

    async def _store_anywhere(self, anywhere: Anywhere, message: Received) -> None:
        """What the connection received, stored for whichever replica holds the
        conversation (by any owner, fresh or not: a copy another owner stored too is
        stored once); a notice is said from here. A message the store cannot take now
        is run here, as without replicas, while this replica is sure of the lease."""
        if not isinstance(message, InboundMessage):
            anywhere.notice(message)
            return
        if not self.lease.fresh():
            self._check.set()  # a stall ran the lease out: the renewal tells
        try:
            stored = await anywhere.store(message)
        except (psycopg.Error, OSError) as exc:
            log.warning("connection_inbox_unreachable", channel=self.channel_id, error=str(exc))
            if self.lease.fresh():
                anywhere.inlet.hand_over(message)
                return
            # A stall past the lease (the server ended its transaction meanwhile): the
            # new owner runs what the inbox holds, so this copy goes there, or nowhere.
            self._check.set()
            try:
                stored = await anywhere.store(message)
            except (psycopg.Error, OSError):
                log.warning("connection_not_owned_dropped", channel=self.channel_id)
                return
        if not stored:
            log.info(
                "connection_message_seen_before",
                channel=self.channel_id,
                conversation=message.conversation_id,
                ref=message.message_ref,
            )

    async def _leave_for_next(self, message: Received) -> None:
        """A message received while this replica is not sure it holds the lease: stored
        in the shared inbox, waiting, for whichever replica owns the connection next
        (this one, if it takes the lease again). The platform may count it delivered
        here (Slack's envelope acknowledged, Discord's catch-up mark moved on) and never
        send it to the new owner; one the new owner received too is stored once. Without
        an inbox (or a platform id, or a reachable store) it is dropped: then the new
        owner's own connection is all there is."""
        ref = message.message_ref if isinstance(message, InboundMessage) else None
        if self.inbox is not None and ref:
            assert isinstance(message, InboundMessage)
            try:
                await self.inbox.put(message.conversation_id, ref, encode(message))
            except (psycopg.Error, OSError) as exc:
                log.warning("connection_inbox_unreachable", channel=self.channel_id, error=str(exc))
            else:
                log.info("connection_not_owned_stored", channel=self.channel_id)
                return
        log.warning("connection_not_owned_dropped", channel=self.channel_id)

    async def _hand_on(self, message: Received) -> bool:
        """Pass ``message`` to the pump; False once the pump reads no more (the daemon
        is stopping): then this replica lets the connection go at once, so that the next
        owner receives, and runs what this one stored and did not hand on."""
        if self._pump_gone:
            return False
        try:
            await self._send.send(message)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.info("connection_handed_over_at_stop", channel=self.channel_id)
            self._pump_gone = True
            self.stop()
            return False
        return True

    async def _stored(self, inbox: ConnectionInbox, message: InboundMessage) -> bool:
        """Put ``message`` into the shared inbox; False when the store cannot be reached
        (then it is handed on directly, as without an inbox)."""
        assert message.message_ref is not None
        payload = encode(message)
        stored: Waiting | Literal["seen", "waiting"]
        try:
            if not self._direct:
                new = await inbox.put(message.conversation_id, message.message_ref, payload)
                stored = "waiting" if new else "seen"
            else:
                stored = await inbox.put_taken(
                    message.conversation_id, message.message_ref, payload
                )
        except (psycopg.Error, OSError) as exc:
            log.warning("connection_inbox_unreachable", channel=self.channel_id, error=str(exc))
            return False
        if isinstance(stored, Waiting):
            finishing = self._finishing
            if finishing is None:
                # Taken as the connection closed: the next owner takes the row over.
                log.info("connection_message_left_taken", channel=self.channel_id)
                return True
            # Taken in the commit that stored it: handed on as the drain would hand it.
            taken = replace(message, handled=anyio.Event(), redelivered=True)
            finishing.start_soon(self._finish, inbox, stored, taken)
            await self._hand_on(taken)
        elif stored == "waiting":
            self._arrived.set()
        else:
            log.info(
                "connection_message_seen_before",
                channel=self.channel_id,
                conversation=message.conversation_id,
                ref=message.message_ref,
            )
        return True

    async def _drain(self, inbox: ConnectionInbox, group: TaskGroup) -> None:
        """Hand the inbox's waiting rows to the pump, in arrival order, while this
        replica holds the connection: what this owner receives, and what an earlier
        owner stored and never finished. Once a look found nothing waiting, what this
        owner receives next is stored taken and handed on at once (:meth:`_stored`).

        It ends only with the connection (its group is cancelled then): while this
        replica is unsure of the lease it takes nothing, and goes on once a renewal
        made it sure again, which a late renewal does without closing the connection."""
        while True:
            self._arrived = anyio.Event()
            try:
                if not await self._drain_once(inbox, group):
                    return  # the pump reads no more: the rows stay for the next owner
            except (psycopg.Error, OSError) as exc:
                log.warning(
                    "connection_inbox_drain_failed", channel=self.channel_id, error=str(exc)
                )
            with anyio.move_on_after(DRAIN_EVERY):
                await self._arrived.wait()

    async def _drain_once(self, inbox: ConnectionInbox, group: TaskGroup) -> bool:
        """Hand on the rows waiting now, if this replica is sure of the lease; False
        once the pump reads no more."""
        if not self.lease.fresh():
            self._direct = False
            return True
        rows = await inbox.waiting()
        self._direct = not rows
        for row in rows:
            if not self.lease.fresh() or (taken := await inbox.take(row)) is None:
                continue
            if row.retaken:
                log.info(
                    "connection_message_taken_over",
                    channel=self.channel_id,
                    conversation=row.conversation_id,
                )
            message = replace(decode(dict(row.payload)), handled=anyio.Event(), redelivered=True)
            group.start_soon(self._finish, inbox, taken, message)
            if not await self._hand_on(message):
                return False
        return True

    async def _finish(self, inbox: ConnectionInbox, row: Waiting, message: InboundMessage) -> None:
        assert message.handled is not None
        await message.handled.wait()
        if self._pump_stopping():
            # Perhaps left unanswered for the next owner ("redelivered"); a turn kept
            # meanwhile already finished its row in its commit.
            return
        try:
            await inbox.done(row.conversation_id, row.seq, row.token)
        except (psycopg.Error, OSError) as exc:
            log.warning("connection_inbox_done_failed", channel=self.channel_id, error=str(exc))

    async def _first_sight(self, message: InboundMessage) -> bool:
        """Not handed over before by any owner (a message without the platform's id, or
        when the store cannot say, is passed on)."""
        if message.message_ref is None:
            return True
        try:
            return await self.lease.first_sight(message.conversation_id, message.message_ref)
        except (psycopg.Error, OSError) as exc:
            log.warning("connection_seen_unknown", channel=self.channel_id, error=str(exc))
            return True

    async def _obey_holds(self, pair: ChannelPair) -> None:
        """Obey the waits an earlier owner was told, and pass on each one this owner
        is told (a wire adapter's, the delivery engine's 429s)."""
        adapter = pair.adapter
        if self.holds is None or not isinstance(adapter, WireAdapter):
            return
        await obey_stored(self.holds, adapter)
        before = adapter.told

        def told(chat: object, seconds: float) -> None:
            before(chat, seconds)
            name = EVERYWHERE if chat is None else adapter.named(chat)
            if name is not None:
                self._told.append((name, seconds))
                self._heard.set()

        adapter.told = told

    async def _share_holds(self, holds: ConnectionHolds) -> None:
        while True:
            await self._heard.wait()
            self._heard = anyio.Event()
            told, self._told = self._told, []
            for conversation, seconds in told:
                await holds.share(conversation, seconds)

    async def _pause(self, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            await self._stopping.wait()

    async def _release(self) -> None:
        try:
            await self.lease.release()
        except (psycopg.Error, OSError) as exc:
            log.warning("connection_lease_release_failed", channel=self.channel_id, error=str(exc))


def _sole(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one failure a task group wrapped (the channel's own, as if unwrapped), or the
    group when there were several."""
    leaves = group.exceptions
    if len(leaves) == 1:
        inner = leaves[0]
        return _sole(inner) if isinstance(inner, BaseExceptionGroup) else inner
    return group
