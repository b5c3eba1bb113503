"""A connection channel's turns run by any replica, not only by the connection's owner.

For a transport whose sending is plain request and response (Slack's Web API, Discord's
REST, Matrix's client-server API), its plug-in offers a *send-only side*: the same wire and
adapter, opened without the receiving connection. With a PostgreSQL store every replica
opens that side at start and keeps it; the receiving connection stays with the one
replica holding the connection lease (:mod:`thalos_bot.service.standby`), which now
only stores what it receives (:class:`~thalos_bot.cluster.seen_lanes.SeenInbox`).

:class:`Anywhere` is one replica's running side of such a channel:

- an :class:`~thalos_bot.cluster.drain.InboxDrain` over the stored rows: the holder of
  each conversation's lease takes its rows in arrival order and hands them to the pump
  through the send-only side's inlet (so busy, /cancel and /status behave as in one
  process: one pump sees the conversation's messages in order);
- a message the connection marks owner-only (:attr:`~thalos_bot.channels.ports.
  InboundMessage.owner_only`: Matrix's encrypted rooms) runs on the connection's owner
  alone (:mod:`thalos_bot.cluster.seen_lanes`);
- the turn's commit is fenced by that conversation lease's token
  (:class:`~thalos_bot.cluster.seen_lanes.SeenFence`), and a delivery to a conversation
  whose lease this replica lost is dropped (:class:`~thalos_bot.cluster.fence.LaneFence`);
- the 429 waits are shared by every replica's sender: a wait one is told is stored and
  announced (``NOTIFY``), each replica obeys the waits running when it starts and each
  one announced; and the channel's overall rate is divided among the live replicas
  that send (the replicas table, as Telegram's webhook replicas divide theirs);
- approval presses: one for a question this replica's sides did not ask is kept in the
  store and announced to every replica, whose side that asked it applies it
  (:mod:`thalos_bot.service.press_relay`, heard on the drain's LISTEN connection).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any
from uuid import uuid4

import anyio
import psycopg
import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels.approvals.relay import Presses
from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.inbound_codec import decode, encode
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.ports import InboundMessage, SourceNotice
from thalos_bot.channels.registry import ChannelPair
from thalos_bot.cluster import connection_holds
from thalos_bot.cluster.connection_holds import EVERYWHERE, ConnectionHolds
from thalos_bot.cluster.drain import InboxDrain
from thalos_bot.cluster.fence import LaneFence
from thalos_bot.cluster.replicas import ReplicaTable
from thalos_bot.cluster.seen_lanes import SeenFence, SeenInbox, SeenLeaseBook, notify_channel
from thalos_bot.domain.ids import ConversationId
from thalos_bot.service.press_relay import PressRelay
from thalos_bot.storage.pg.database import PgDatabase

log = structlog.get_logger(__name__)

LOCAL = "local:"
"""The ref of a message the platform gave no id of its own (a Slack slash command):
stored once, as it is received once."""


OWNER_ONLY_MARGIN = 0.05
"""Seconds past the end of a lease (by the server's clock) a new owner of the connection
lets pass before looking again at an owner-only conversation another replica held."""


def obey(adapter: WireAdapter[Any, Any], conversation: str, seconds: float) -> None:
    """Hold the chat of ``conversation`` (or every chat) for ``seconds`` (logged); a
    conversation that is none of this channel's is left alone."""
    if conversation == EVERYWHERE:
        adapter.hold_everywhere(seconds)
    elif (where := adapter.where(ConversationId(conversation))) is not None:
        adapter.hold(where[0], seconds)
    else:
        return
    log.info(
        "connection_hold_obeyed",
        channel=str(adapter.channel_id),
        conversation=conversation,
        seconds=round(seconds, 2),
    )


async def obey_stored(holds: ConnectionHolds, adapter: WireAdapter[Any, Any]) -> None:
    """Obey the waits stored and still running (another replica was told them)."""
    try:
        running = await holds.running()
    except (psycopg.Error, OSError) as exc:
        log.warning("connection_holds_unknown", channel=holds.channel_id, error=str(exc))
        return
    for conversation, seconds in running.items():
        obey(adapter, conversation, seconds)


class Anywhere:
    """One channel's turns on this replica: the conversations whose lease it holds."""

    def __init__(
        self,
        db: PgDatabase,
        url: str,
        pair: ChannelPair,
        replica: str,
        lease_seconds: float,
        *,
        presses: Presses | None = None,
        press_within: float = 120.0,
    ) -> None:
        """``presses``: the channel's approval presses, relayed by this replica's sides
        (the send-only one's and the connection's, where it is open here);
        ``press_within``: the approval timeout (a press the store refuses is written
        again until then, in order)."""
        if not isinstance(pair.source, Inlet) or not isinstance(pair.adapter, WireAdapter):
            raise TypeError(f"{pair.describe}: a send-only side is an inlet and a wire adapter")
        self.pair = pair
        self.inlet: Inlet = pair.source
        self.adapter: WireAdapter[Any, Any] = pair.adapter
        self.channel_id = str(self.inlet.channel_id)
        self._db = db
        self._url = url
        self._replica = replica
        self._lease_seconds = lease_seconds
        self.book = SeenLeaseBook(db, self.channel_id, replica, lease_seconds)
        self.inbox = SeenInbox(db, self.channel_id, self.book.held, self.book)
        self.holds = ConnectionHolds(db, self.channel_id)
        self.fence = SeenFence(self.book)
        self.stopping: Callable[[], bool] = lambda: False
        """Whether the pump is stopping (a message it deals with then may have been left
        for the next holder: its row is not marked done)."""
        self._group: TaskGroup | None = None
        self.drain: InboxDrain[InboundMessage] | None = None
        """The drain while :meth:`running`."""
        self.presses = PressRelay(db, presses, within=press_within) if presses is not None else None

    # -- the connection's owner: storing what it receives -----------------------------

    async def store(self, message: InboundMessage) -> bool:
        """Store a message the connection received, for the conversation's lease holder;
        False when it was received before. Raises what psycopg raises."""
        ref = message.message_ref or f"{LOCAL}{uuid4().hex}"
        return await self.inbox.put(
            message.conversation_id, ref, encode(message), owner_only=message.owner_only
        )

    def notice(self, notice: SourceNotice) -> None:
        """A notice the connection's side made (no turn): said from here."""
        self.inlet.hand_over(notice)

    # -- every replica: running the conversations it holds ---------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Take and run this replica's conversations until the block ends (the pump
        stopping reading stops the taking first; the leases are released at the end)."""
        rate = self.adapter.wire.limits.global_rate
        drain: InboxDrain[InboundMessage] = InboxDrain(
            url=self._url,
            inbox=self.inbox,
            leases=self.book,
            # A row of its own per channel (its intake names the channel), so that two
            # such channels of one replica do not overwrite each other's.
            replicas=ReplicaTable(
                self._db, f"{self._replica}/{self.channel_id}", alive=self._lease_seconds
            ),
            read=self._read,
            hand_over=self._hand_over,
            interrupted=lambda lane: None,  # a cut turn's row runs again instead
            lease_seconds=self._lease_seconds,
            share=lambda share: self._shared(share, rate),
            rate=rate,
            health=None,
            name=self.channel_id,
            intake=f"{self.channel_id}-send",
            notify_channel=notify_channel(self.channel_id),
            on_beat=lambda: self.book.look(timedelta(seconds=self._lease_seconds)),
            hear_also={
                connection_holds.channel_of(self.channel_id): self._heard_hold,
                **({self.presses.notify: self.presses.heard} if self.presses is not None else {}),
            },
            on_listen=self.presses.again if self.presses is not None else None,
        )
        self.drain = drain
        async with anyio.create_task_group() as group:
            self._group = group
            await obey_stored(self.holds, self.adapter)
            self._share_told(group)
            self.adapter.gate = LaneFence(
                self.book,
                drain.lost,
                drain.unanswered,
                lambda conversation: conversation,
                group=group,
                name=self.channel_id,
            )
            async with drain.running(group) as taking, AsyncExitStack() as relaying:
                if self.presses is not None:  # its last presses relayed before the drain stops
                    await relaying.enter_async_context(self.presses.running())
                self.inlet.stop_first(taking.cancel)  # no row is taken that no turn would run
                yield
            group.cancel_scope.cancel()

    def connection_taken(self) -> None:
        """This replica holds the connection now: the owner-only rows an earlier owner
        left are its to run. It looks at once rather than at the drain's next sweep
        (half a lease later), each conversation whose lease the earlier owner (or a
        replica letting it go) still holds again as soon as that lease runs out."""
        if self._group is not None:
            self._group.start_soon(self._take_owner_only, name=f"{self.channel_id}-owner-only")

    async def _take_owner_only(self) -> None:
        drain = self.drain
        deadline = anyio.current_time() + 2 * self._lease_seconds  # then the sweep's
        while drain is not None and self.book.owns():
            try:
                free_in = await self.book.owner_only_free_in()
            except (psycopg.Error, OSError) as exc:
                log.warning(
                    "connection_owner_only_look_failed",
                    channel=self.channel_id,
                    error=type(exc).__name__,
                )
                return
            for lane, seconds in free_in.items():
                if seconds <= 0:
                    drain.wake(lane)
            later = [seconds for seconds in free_in.values() if seconds > 0]
            if not later or anyio.current_time() + min(later) > deadline:
                return
            await anyio.sleep(min(later) + OWNER_ONLY_MARGIN)

    def _read(self, seq: int, payload: Mapping[str, Any]) -> InboundMessage | None:
        try:
            message = decode(dict(payload))
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("connection_row_unreadable", channel=self.channel_id, error=str(exc))
            return None
        lane = message.conversation_id
        token = self.book.held.get(lane)
        if token is None:
            return None
        handled = anyio.Event()
        if self._group is not None:
            self._group.start_soon(self._finish, lane, seq, token, handled)
        log.info("connection_turn_taken", channel=self.channel_id, conversation=lane, seq=seq)
        return replace(message, handled=handled, redelivered=True)

    def _hand_over(self, messages: Any) -> None:
        for message in messages:
            self.inlet.hand_over(message)

    async def _finish(self, lane: str, seq: int, token: int, handled: anyio.Event) -> None:
        await handled.wait()
        if self.stopping():
            return  # perhaps left for the next holder; a turn kept already did this
        try:
            await self.book.done(lane, seq, token)
        except (psycopg.Error, OSError) as exc:
            log.warning("connection_inbox_done_failed", channel=self.channel_id, error=str(exc))

    def _shared(self, share: float, rate: float) -> None:
        """This replica's share of the channel's rate, at a heartbeat that changed it:
        the whole rate means no other replica sends now."""
        self.adapter.share_rate(share)
        self.book.alone = share >= rate

    # -- the shared 429 waits ---------------------------------------------------------

    def _heard_hold(self, payload: str) -> None:
        held = connection_holds.parse(payload)
        if held is not None and held[1] > 0:
            obey(self.adapter, *held)

    def _share_told(self, group: TaskGroup) -> None:
        """Each wait this replica's sender is told is stored and announced (in ``group``:
        the sender never waits for the database)."""
        adapter, before = self.adapter, self.adapter.told

        def told(chat: object, seconds: float) -> None:
            before(chat, seconds)
            name = EVERYWHERE if chat is None else adapter.named(chat)
            if name is not None:
                group.start_soon(self.holds.share, str(name), seconds)

        adapter.told = told
