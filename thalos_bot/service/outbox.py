"""Delivery from the outbox: every final answer reaches its channel exactly once.

A live turn's answer is written to the outbox with the turn; the adapter the pump
delivers through hands it over here (:meth:`Outbox.hand_over`, see
:mod:`thalos_bot.service.finals`) instead of delivering it itself, and the row is marked
delivered when the channel confirms it. A detached result (a scheduled run's answer, a
run's failure notice) comes in through :meth:`Outbox.deliver` and goes to its channel's
worker. At start-up, before any message is read, the rows a previous process left
pending are handed to their channels again, with what that process noted about how far
it got: Telegram uses it to check whether a send in doubt arrived before sending again.
Rows that are done are pruned after ``keep``.

Replicas sharing the outbox (a :class:`~thalos_bot.storage.outbox.ClaimingStore`) also
sweep while they run: every ``sweep_every`` seconds each renews its claims on the rows it
has in hand and claims the rows whose claim ran out (their replica died or stalled), so
those are delivered by a replica already running, with their progress kept.

A spoken answer's clips are rows too (kind ``voice``, :meth:`Outbox.keep_clip`), their
audio a file beside the database (:mod:`thalos_bot.service.clip_files`), removed when
the row is done: a channel that can confirm an upload
(:class:`~thalos_bot.channels.final.ConfirmingClips`) journals it like a final's part,
so after a crash an upload in doubt is checked or repeated as the same request, never
doubled. (Replicas: a clip's file is on the replica that made it; one that takes over
such a row without the file refuses it, logged.)
"""

from __future__ import annotations

import math
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

import anyio
import structlog
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from thalos_bot.channels.final import (
    ConfirmingAdapter,
    ConfirmingClips,
    ConfirmingNotices,
    PassingFinals,
)
from thalos_bot.channels.ports import ChannelAdapter, Notice
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.events import TurnCompleted, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.pump.flush import safe_deliver
from thalos_bot.service.clip_files import ClipFiles, clip_key
from thalos_bot.storage.outbox import ClaimingStore, OutboxRow, OutboxState, OutboxStore
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry, OutboxKind

log = structlog.get_logger(__name__)

PRUNE_EVERY = 3600.0
"""Seconds between two prunings (and one at start-up)."""
DRAIN_BOUND = 5.0
"""Seconds the workers get at shutdown to deliver what they were given."""


def new_key() -> str:
    return f"out-{secrets.token_hex(8)}"


class _Journal:
    """A row's :class:`~thalos_bot.channels.final.DeliveryJournal`."""

    def __init__(self, outbox: Outbox, row: OutboxRow) -> None:
        self._outbox = outbox
        self._row = row
        self._progress: Mapping[str, object] = dict(row.progress)

    @property
    def progress(self) -> Mapping[str, object]:
        return self._progress

    async def save(self, progress: Mapping[str, object]) -> None:
        self._progress = dict(progress)
        await self._outbox.store.save_progress(self._row.id, self._progress, self._outbox.clock())

    async def confirm(self) -> None:
        await self._outbox.finish(self._row, "delivered")

    async def refuse(self) -> None:
        await self._outbox.finish(self._row, "failed")


class Outbox:
    """The delivery side of the outbox. Use :meth:`running` around the pump."""

    def __init__(
        self,
        store: OutboxStore,
        adapters: Mapping[ChannelId, ChannelAdapter],
        *,
        keep: float,
        clock: Callable[[], datetime] = utc_now,
        clips: ClipFiles | None = None,
    ) -> None:
        self.store = store
        self.clips = clips
        """Where the clips' audio is kept (None: clips are not kept, delivered as they
        come)."""
        self.adapters = dict(adapters)
        self.keep = keep
        self.clock = clock
        self._queues: dict[ChannelId, MemoryObjectSendStream[OutboxRow]] = {}
        self._group: TaskGroup | None = None
        self._in_hand: set[str] = set()
        """Rows this process has queued or handed to a channel, until they are
        finished: a sweep neither claims them again nor lets their claim run out."""

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Outbox]:
        """Prune, hand the rows left pending back to their channels, then run one
        worker per channel (for :meth:`deliver`) and the pruning, until exit. At exit
        the workers finish what they were given, for at most :data:`DRAIN_BOUND`."""
        await self.prune()
        pruning, sweeping = anyio.CancelScope(), anyio.CancelScope()
        async with anyio.create_task_group() as group:
            self._group = group
            for channel_id in self.adapters:
                await self._redeliver(channel_id)
                send, receive = anyio.create_memory_object_stream[OutboxRow](math.inf)
                self._queues[channel_id] = send
                group.start_soon(self._worker, receive, name=f"outbox-{channel_id}")
            group.start_soon(self._prune_loop, pruning)
            if isinstance(self.store, ClaimingStore):
                group.start_soon(self._sweep_loop, self.store, sweeping)
            try:
                yield self
            finally:
                for send in self._queues.values():
                    send.close()
                self._queues.clear()
                pruning.cancel()
                sweeping.cancel()
                group.cancel_scope.deadline = anyio.current_time() + DRAIN_BOUND
        self._group = None

    # -- channels opened and closed while running ------------------------------------

    async def attach(self, channel_id: ChannelId, adapter: ChannelAdapter) -> None:
        """A channel opened after start-up (this replica took its connection over): its
        worker starts, and its pending rows are claimed and queued, as at start-up."""
        self.adapters[channel_id] = adapter
        if self._group is None or channel_id in self._queues:
            return
        send, receive = anyio.create_memory_object_stream[OutboxRow](math.inf)
        self._queues[channel_id] = send
        self._group.start_soon(self._worker, receive, name=f"outbox-{channel_id}")
        rows = [row for row in await self.store.pending(channel_id) if row.id not in self._in_hand]
        if rows:
            log.info("outbox_redelivering", channel=channel_id, rows=len(rows))
        for row in rows:
            self._enqueue(row)

    def detach(self, channel_id: ChannelId) -> None:
        """A channel closed while running (its connection went to another replica): no
        row of it is claimed here any more; what its worker still holds stays pending
        (the channel's new owner delivers it)."""
        self.adapters.pop(channel_id, None)
        queue = self._queues.pop(channel_id, None)
        if queue is not None:
            queue.close()

    # -- the seams ----------------------------------------------------------------

    def address(self, channel_id: ChannelId, conversation_id: ConversationId) -> OutboxAddress:
        """A new row's address, for a turn's ``deliver_to``."""
        return OutboxAddress(channel_id, conversation_id, new_key())

    async def deliver(
        self,
        channel_id: ChannelId,
        conversation_id: ConversationId,
        text: str,
        *,
        kind: OutboxKind,
        key: str | None = None,
    ) -> None:
        """Write ``text`` to the outbox, then have the channel's worker deliver it (a
        detached result: a scheduled run's answer or a failure notice). With ``key``
        (the row's id) a second call with the same key writes nothing: a result given
        again after a crash is delivered once."""
        if key is not None and await self.store.get(key) is not None:
            log.info("outbox_row_exists", row=key)
            return
        address = self.address(channel_id, conversation_id)
        if key is not None:
            address = OutboxAddress(channel_id, conversation_id, key)
        entry = OutboxEntry(address, text, kind)
        at = self.clock()
        await self.store.add(entry, at)
        row = OutboxRow(entry.address.key, channel_id, conversation_id, kind, text, "pending", at)
        if not self._enqueue(row):
            log.warning("outbox_channel_not_open", channel=channel_id, row=row.id)
            # kept pending: delivered when the channel is open again

    def _enqueue(self, row: OutboxRow) -> bool:
        """Give ``row`` to its channel's worker; False when the channel is not open."""
        queue = self._queues.get(row.channel_id)
        if queue is None:
            return False
        self._in_hand.add(row.id)
        queue.send_nowait(row)
        return True

    async def hand_over(self, key: str, terminal: TurnCompleted, fallback: ChannelAdapter) -> bool:
        """Deliver a live turn's final answer through its row (``key``). False when the
        row is gone or no longer pending (the caller then delivers ``terminal`` itself)."""
        row = await self.store.get(key)
        if row is None or row.state != "pending":
            return False
        adapter = self.adapters.get(row.channel_id, fallback)
        passes = isinstance(adapter, PassingFinals) and adapter.passes_final(row.conversation_id)
        if isinstance(adapter, ConfirmingAdapter) and not passes:
            self._in_hand.add(row.id)  # until the channel confirms it (finish)
            try:
                await adapter.deliver_final(
                    row.conversation_id, row.text, _Journal(self, row), ends_turn=True
                )
            except BaseException:
                self._in_hand.discard(row.id)
                raise
        else:
            await safe_deliver(fallback, row.conversation_id, terminal)
            # Marked off the turn's path: the conversation is free as soon as it shows.
            if self._group is not None:
                self._group.start_soon(self._finish_logged, row)
            else:
                await self.finish(row, "delivered")
        return True

    async def keep_clip(
        self,
        channel_id: ChannelId,
        conversation_id: ConversationId,
        clip: VoiceClip,
        fallback: ChannelAdapter,
    ) -> bool:
        """Keep a spoken answer's clip as a row (its audio on disk), then hand it to its
        channel. False when clips are not kept here or the clip names no turn (the
        caller delivers it itself). A clip kept already adds nothing (its row's key is
        the turn's and the part's)."""
        files = self.clips
        if files is None or clip.turn is None:
            return False
        key = clip_key(clip.turn, clip)
        row = await self.store.get(key)
        if row is not None and row.state != "pending":
            log.info("outbox_row_exists", row=key)
            return True
        if key in self._in_hand:
            return True  # being delivered already (taken up at start-up)
        self._in_hand.add(key)  # from now: a pruning keeps its file
        try:
            if row is None:
                text = await anyio.to_thread.run_sync(files.write, key, clip)
                entry = OutboxEntry(OutboxAddress(channel_id, conversation_id, key), text, "voice")
                at = self.clock()
                await self.store.add(entry, at)
                row = OutboxRow(key, channel_id, conversation_id, "voice", text, "pending", at)
            await self._send_clip(row, clip, self.adapters.get(channel_id, fallback))
        except BaseException:
            self._in_hand.discard(key)
            raise
        return True

    # -- delivering ----------------------------------------------------------------

    async def _redeliver(self, channel_id: ChannelId) -> None:
        rows = await self.store.pending(channel_id)
        if rows:
            log.info("outbox_redelivering", channel=channel_id, rows=len(rows))
        for row in rows:
            self._in_hand.add(row.id)
            await self._send(row)

    async def _sweep_loop(self, store: ClaimingStore, scope: anyio.CancelScope) -> None:
        with scope:
            while True:
                await anyio.sleep(store.sweep_every)
                try:
                    await self.sweep(store)
                except Exception:
                    log.exception("outbox_sweep_failed")

    async def sweep(self, store: ClaimingStore) -> int:
        """Renew the claims on the rows in hand, then give each channel's worker the
        rows whose claim ran out; how many were taken over."""
        await store.hold(set(self._in_hand))
        taken = 0
        for channel_id in self._queues:
            for row in await store.pending(channel_id):
                if row.id in self._in_hand:
                    continue  # ours already (its claim had run out while queued)
                log.info("outbox_taken_over", channel=channel_id, row=row.id)
                self._enqueue(row)
                taken += 1
        return taken

    async def _worker(self, queue: MemoryObjectReceiveStream[OutboxRow]) -> None:
        async with queue:
            async for row in queue:
                await self._send(row)

    async def _send(self, row: OutboxRow) -> None:
        adapter = self.adapters.get(row.channel_id)
        if adapter is None:
            log.warning("outbox_channel_not_open", channel=row.channel_id, row=row.id)
            self._in_hand.discard(row.id)
            return
        try:
            if row.kind == "voice":
                clip = await self._clip_of(row)
                if clip is None:
                    await self.finish(row, "failed")
                    return
                await self._send_clip(row, clip, adapter)
                return
            notice = Notice(row.text, "warning" if row.kind == "notice" else "info")
            if row.kind == "notice" and isinstance(adapter, ConfirmingNotices):
                await adapter.deliver_notice(row.conversation_id, notice, _Journal(self, row))
                return
            if isinstance(adapter, ConfirmingAdapter):
                await adapter.deliver_final(
                    row.conversation_id, row.text, _Journal(self, row), ends_turn=False
                )
                return
            await safe_deliver(adapter, row.conversation_id, notice)
            await self.finish(row, "delivered")
        except Exception:
            log.exception("outbox_delivery_failed", channel=row.channel_id, row=row.id)
            self._in_hand.discard(row.id)  # the next sweep tries again

    async def _clip_of(self, row: OutboxRow) -> VoiceClip | None:
        files = self.clips
        if files is None:
            log.warning("outbox_clip_not_kept", channel=row.channel_id, row=row.id)
            return None
        return await anyio.to_thread.run_sync(files.read, row.id, row.text)

    async def _send_clip(self, row: OutboxRow, clip: VoiceClip, adapter: ChannelAdapter) -> None:
        """Hand the clip to a channel that confirms its upload, else deliver it and mark
        it delivered."""
        if isinstance(adapter, ConfirmingClips):
            await adapter.deliver_clip(row.conversation_id, clip, _Journal(self, row))
            return
        await safe_deliver(adapter, row.conversation_id, clip)
        await self.finish(row, "delivered")

    async def _finish_logged(self, row: OutboxRow) -> None:
        try:
            await self.finish(row, "delivered")
        except Exception:
            log.exception("outbox_mark_failed", channel=row.channel_id, row=row.id)

    async def finish(self, row: OutboxRow, state: OutboxState) -> None:
        await self.store.finish(row.id, state, self.clock())
        self._in_hand.discard(row.id)
        if row.kind == "voice" and self.clips is not None:
            await anyio.to_thread.run_sync(self.clips.remove, row.id)
        event = "outbox_delivered" if state == "delivered" else "outbox_refused"
        log.info(event, channel=row.channel_id, conversation=row.conversation_id, row=row.id)

    # -- pruning ------------------------------------------------------------------

    async def prune(self) -> int:
        removed = await self.store.prune(self.clock() - timedelta(seconds=self.keep))
        if removed:
            log.info("outbox_pruned", rows=removed, keep_s=self.keep)
        if self.clips is not None:
            await self._prune_clips(self.clips)
        return removed

    async def _prune_clips(self, files: ClipFiles) -> None:
        """Remove the clip files whose row is done or gone (a crash came between the
        row's end and its file's removal)."""
        among = await anyio.to_thread.run_sync(files.names)
        if not among:
            return
        kept = await self.store.kept(list(among))
        kept |= self._in_hand
        gone = await anyio.to_thread.run_sync(files.remove_all_but, kept, among)
        if gone:
            log.info("outbox_clips_pruned", files=gone)

    async def _prune_loop(self, scope: anyio.CancelScope) -> None:
        with scope:
            while True:
                await anyio.sleep(min(PRUNE_EVERY, self.keep))
                try:
                    await self.prune()
                except Exception:
                    log.exception("outbox_prune_failed")
