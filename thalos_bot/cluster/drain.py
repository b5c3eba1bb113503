"""The inbox drained by the holder of each lane's lease, on every replica.

A transport whose platform posts to a webhook stores each delivery in the shared inbox
(:mod:`thalos_bot.cluster.inbox`), keyed by its lane (a chat). Each replica LISTENs for
the inbox's NOTIFY; on hearing of a lane it tries to take that lane's lease
(:mod:`thalos_bot.cluster.leases`), and the one that holds it drains the lane's rows in
order into the transport's hand-over. A lease lost (this process stalled past it) stops
that lane's drain here; a lane whose holder died is picked up by a sweep once its lease
has run out. A rate limit one replica hears of (a 429's wait) is stored
(:mod:`thalos_bot.cluster.holds`) and obeyed by all.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Generic, Protocol, TypeVar

import anyio
import psycopg
import structlog

from thalos_bot.cluster import holds as shared_holds
from thalos_bot.cluster.holds import ChatHolds
from thalos_bot.cluster.inbox import CHANNEL as NOTIFY_CHANNEL
from thalos_bot.cluster.inbox import InboxRow
from thalos_bot.cluster.leases import Lease, LeaseBook
from thalos_bot.cluster.replicas import ReplicaTable
from thalos_bot.storage.pg.listener import listen_for_ever

log = structlog.get_logger(__name__)

T = TypeVar("T")
RECONNECT_S = 1.0
UNCUT_S = 10.0
"""How long a stop waits for a lease's or a row's commit to end (and be noted)."""
EVENTS = (
    "lane_failed",
    "listen_failed",
    "rate_shared",
    "heartbeat_failed",
    "sweep_failed",
    "leases_not_released",
)
"""What the drain logs, each under the transport's name (``telegram_lane_failed``)."""


class LaneInbox(Protocol):
    """The rows waiting per lane: the webhook inbox (:class:`~.inbox.Inbox`), or a
    connection channel's (:class:`~.seen_lanes.SeenInbox`)."""

    bot: int
    """The first part of a NOTIFY's payload (``<bot>:<lane>``)."""

    async def waiting(self, lane: str) -> list[InboxRow]: ...

    async def lanes_waiting(self) -> list[str]: ...

    async def prune(self) -> int: ...


class Health(Protocol):
    """Told whether the drain hears the inbox (a channel's health)."""

    def ok(self) -> None: ...

    def failed(self, reason: str) -> None: ...


class _Quiet:
    def ok(self) -> None:
        pass

    def failed(self, reason: str) -> None:
        pass


class InboxDrain(Generic[T]):
    """One replica's side of the inbox: each lane it holds the lease of, drained in
    order into ``hand_over``; the heartbeat that keeps those leases and the replica's
    share of the overall rate; the sweep that picks up a dead replica's lanes."""

    def __init__(
        self,
        *,
        url: str,
        inbox: LaneInbox,
        leases: LeaseBook,
        replicas: ReplicaTable,
        read: Callable[[int, Mapping[str, Any]], T | None],
        hand_over: Callable[[Sequence[T]], None],
        interrupted: Callable[[str], None],
        lease_seconds: float,
        share: Callable[[float], None] = lambda rate: None,
        rate: float = 25.0,
        holds: ChatHolds | None = None,
        obey: Callable[[int, float], None] = lambda chat, seconds: None,
        health: Health | None = None,
        name: str = "telegram",
        intake: str = "webhook",
        notify_channel: str = NOTIFY_CHANNEL,
        hear_also: Mapping[str, Callable[[str], None]] | None = None,
        on_beat: Callable[[], Awaitable[None]] | None = None,
        on_listen: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``intake``: how this replica beats in the replicas table (its rate is shared
        among the live ones beating so); ``notify_channel``: where the inbox's rows are
        announced; ``hear_also``: more NOTIFY channels, each with what hears them;
        ``on_beat``: what else to read at each heartbeat (its database errors are the
        heartbeat's); ``on_listen``: what else to read each time the LISTEN connection
        is made (again: what ``hear_also`` missed meanwhile), before hearing."""
        self._url = url
        self._intake = intake
        self._notify_channel = notify_channel
        self._hear_also = dict(hear_also or {})
        self._on_beat = on_beat
        self._on_listen = on_listen
        self._holds = holds
        self._obey = obey
        self._inbox = inbox
        self._leases = leases
        self._replicas = replicas
        self._read = read
        self._hand_over = hand_over
        self._name = name
        self._event = {what: f"{name}_{what}" for what in EVENTS}
        self._interrupted = interrupted
        self._share = share
        self._rate = rate
        self.rate_share = rate
        """This replica's part of the bot's overall rate (global_max_rate / live ones)."""
        self._beat = lease_seconds / 3
        self._sweep_every = lease_seconds / 2
        self._wakes: dict[str, anyio.Event] = {}
        self._group: anyio.abc.TaskGroup | None = None
        self.lost: set[str] = set()
        self.unanswered: dict[str, int] = {}
        """Each lane's update taken and handed over whose chat has heard nothing since:
        the pump never read it if this replica stops now (then it is put back)."""
        self.listening = anyio.Event()
        self.health = health or _Quiet()

    @asynccontextmanager
    async def running(self, group: anyio.abc.TaskGroup) -> AsyncIterator[anyio.CancelScope]:
        """Drain (and sweep) and heartbeat in ``group`` until the block ends. Yields the
        scope that stops the taking alone (when the pump stops reading, no row is taken
        that no turn would run: the next holder gets it). At the end, the rows taken
        but never read go back to the inbox, the leases are released and this replica
        leaves the table."""
        taking, beating = anyio.CancelScope(), anyio.CancelScope()
        taken = anyio.Event()

        async def take() -> None:
            try:
                with taking:
                    await self.run()
            finally:
                taken.set()

        async def beat() -> None:
            with beating:
                await self.heartbeat()

        group.start_soon(take, name=f"{self._name}-webhook-receiver")
        group.start_soon(beat, name=f"{self._name}-webhook-heartbeat")
        try:
            yield taking
        finally:
            taking.cancel()
            beating.cancel()
            with anyio.CancelScope(shield=True):
                await taken.wait()  # a take committing ends first, and is noted
                await self._leave()

    async def _leave(self) -> None:
        try:
            for lane, update_id in list(self.unanswered.items()):
                await self._leases.untake(lane, update_id, self._inbox.bot)
            await self._leases.release()
            await self._replicas.leave()
        except psycopg.Error as exc:
            log.warning(self._event["leases_not_released"], error=type(exc).__name__)

    async def run(self) -> None:
        """Take updates (and sweep) until cancelled. The heartbeat runs apart
        (:meth:`heartbeat`): it must go on while turns finish at shutdown."""
        async with anyio.create_task_group() as group:
            self._group = group
            group.start_soon(self._listen)
            group.start_soon(self._sweep)

    def wake(self, lane: str) -> None:
        event = self._wakes.get(lane)
        if event is not None:
            event.set()
        elif self._group is not None:
            self._wakes[lane] = anyio.Event()
            self._group.start_soon(self._drain, lane, name=f"{self._name}-lane-{lane}")

    async def _drain(self, lane: str) -> None:
        try:
            # A stop is never let in between a lease's commit and ``held``: a lease
            # taken unknown to this replica would not be released when it stops.
            lease = await _uncut(self._leases.acquire(lane))
            if lease is None:
                return
            self.lost.discard(lane)
            if lease.interrupted is not None:
                self._interrupted(lane)
            while self._leases.held.get(lane) == lease.token:
                wake = self._wakes[lane] = anyio.Event()
                rows = await self._inbox.waiting(lane)
                for row in rows:
                    if not await self._take(lease, row.update_id, row.payload):
                        break
                if not rows:
                    await wake.wait()
        except (psycopg.Error, OSError) as exc:
            log.warning(self._event["lane_failed"], lane=lane, error=type(exc).__name__)
        finally:
            self._wakes.pop(lane, None)

    async def _take(self, lease: Lease, update_id: int, payload: Mapping[str, Any]) -> bool:
        # Nor between a row's taking and ``unanswered``: a stop that came while the
        # commit's answer was on its way left the row taken, its turn marked begun, and
        # not put back, so the next holder called it interrupted (the rolling SIGTERM's
        # flake, seen in CI as "query cancellation interrupted").
        taken = await _uncut(self._leases.take(lease, update_id, self._inbox.bot))
        if not taken:
            return self._leases.held.get(lease.lane) == lease.token
        decoded = self._read(update_id, payload)  # None: unreadable (``read`` says so)
        if decoded is not None:
            self.unanswered[lease.lane] = update_id
            self._hand_over([decoded])
        return True

    async def _listen(self) -> None:
        await listen_for_ever(
            self._url,
            [self._notify_channel, shared_holds.CHANNEL, *self._hear_also],
            self._heard,
            unheard=self._event["listen_failed"],
            again=self._listening_again,
            failed=lambda: self.health.failed("database unreachable"),
            retry_every=RECONNECT_S,
        )

    async def _listening_again(self) -> None:
        await self._obey_running()  # before taking a chat: a wait may run
        self.listening.set()
        self.health.ok()
        await self._wake_waiting()  # what arrived while not listening
        if self._on_listen is not None:
            await self._on_listen()

    def _heard(self, channel: str, payload: str) -> None:
        prefix = f"{self._inbox.bot}:"
        if channel in self._hear_also:
            self._hear_also[channel](payload)
        elif channel == shared_holds.CHANNEL:
            self._heard_hold(payload)
        elif payload.startswith(prefix):
            self.wake(payload.removeprefix(prefix))

    def _heard_hold(self, payload: str) -> None:
        held = shared_holds.parse(payload, self._inbox.bot)
        if held is not None:
            self._obey(*held)

    async def _obey_running(self) -> None:
        if self._holds is not None:
            for chat, seconds in (await self._holds.running()).items():
                self._obey(chat, seconds)

    async def _wake_waiting(self) -> None:
        for lane in await self._inbox.lanes_waiting():
            self.wake(lane)

    async def heartbeat(self) -> None:
        while True:
            lost: set[str] = set()
            try:
                lost = await self._leases.renew()
                await self._replicas.beat(self._intake)
                share = await self._replicas.share(self._rate, self._intake)
                if share != self.rate_share:
                    log.info(self._event["rate_shared"], per_second=round(share, 2))
                    self.rate_share = share
                    self._share(share)
                if self._on_beat is not None:
                    await self._on_beat()
            except (psycopg.Error, OSError) as exc:
                # What the renewal lost or let go (gone from ``held``) is still fenced.
                log.warning(self._event["heartbeat_failed"], error=type(exc).__name__)
            for lane in lost:
                self.lost.add(lane)
                event = self._wakes.get(lane)
                if event is not None:
                    event.set()
            await anyio.sleep(self._beat)

    async def _sweep(self) -> None:
        """Chats left behind by a replica that died: nobody will NOTIFY for them, and
        one whose turn it cut short is told so without waiting for another message."""
        while True:
            await anyio.sleep(self._sweep_every)
            try:
                await self._wake_waiting()
                for lane in await self._leases.orphaned():
                    self.wake(lane)
                await self._inbox.prune()
                if self._holds is not None:
                    await self._holds.prune()
            except (psycopg.Error, OSError) as exc:
                log.warning(self._event["sweep_failed"], error=type(exc).__name__)


async def _uncut(step: Awaitable[T]) -> T | None:
    """``step`` run to its end even when a stop comes meanwhile; None when the database
    has not answered within :data:`UNCUT_S` (then nothing is noted, as before)."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(UNCUT_S):
        return await step
    return None
