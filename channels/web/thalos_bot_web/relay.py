"""The pages' events: written to the daemon's store, read back from it
(:class:`~thalos_bot.channels.page_events.SharedPageEvents`: its SQLite file, where they
outlive a restart; on replicas the shared store, read back by every replica).

What this process's adapter emits is queued (the adapter's calls are synchronous) and
written in order by :meth:`Relay.run`, which then reads it back into the conversation's
timeline with the number the store gave it, as every other replica does. On PostgreSQL
every replica LISTENs for the store's NOTIFY of each event written
(:meth:`Relay.follow`): it reads the events of the conversations it has in memory as
soon as one of them is written on any replica, and every :data:`SAFETY_EVERY` seconds
anyway (a notification lost while its connection was made again). A stream that opens
first catches its timeline up (:meth:`Relay.catch_up`): an event id means the same
event everywhere, so a browser reconnecting to another replica resumes after the last
one it saw.

The store out of reach: an event waits in the queue and is written again every second,
in order, as long as this process lives. A file the page shows is not queued here: the
adapter's upload writes it to the store before the event that names it (the delivery
engine makes the upload again after a failure).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from thalos_bot.channels.page_events import SharedPageEvents
from thalos_bot.domain.ids import ConversationId
from thalos_bot_web.timeline import Timeline
from thalos_bot_web.upgrade import Imports

log = structlog.get_logger(__name__)

SAFETY_EVERY = 5.0
"""How often a replica reads the others' events when it heard of none (seconds)."""
RETRY_EVERY = 1.0
READ_BACK = 16
"""Events written before they are read back even while more are queued (a burst of
partials is read in one go, and an event waited for is not held up by the others)."""


@dataclass(frozen=True, slots=True)
class _Pending:
    conversation: ConversationId
    kind: str
    data: dict[str, Any]
    turn: str | None
    done: anyio.Event = field(default_factory=anyio.Event)
    """Set once this event is in the store, and read back into its timeline."""


class Relay:
    def __init__(self, store: SharedPageEvents, keep: int, imports: Imports | None = None) -> None:
        self.store = store
        """Where the events and files are written."""
        self.timelines: dict[ConversationId, Timeline] = {}
        """The conversations in memory, each with its page's events."""
        self._keep = keep
        self._queue: deque[_Pending] = deque()
        self._unread: list[_Pending] = []
        """Written, not read back yet."""
        self._queued = anyio.Event()
        self._reading = anyio.Lock()
        self._woken = anyio.Event()
        self.listening = anyio.Event()
        """Set once this replica first hears the store's NOTIFY."""
        self.imports = imports or Imports(None)
        """An older version's history files, each written first into the store."""

    def timeline(self, conversation: ConversationId) -> Timeline:
        """``conversation``'s timeline, made empty the first time (the store's events are
        read into it: :meth:`catch_up`, and whenever the store has more)."""
        found = self.timelines.get(conversation)
        if found is None:
            found = self.timelines[conversation] = Timeline(self._keep)
        return found

    def publish(
        self, conversation: ConversationId, kind: str, data: dict[str, Any], turn: str | None = None
    ) -> anyio.Event:
        """Queue an event of ``conversation`` for every replica (this one included);
        the event set once it is in the store and this replica's timeline has it
        (whatever is queued after it). A partial replaces the same turn's partial
        queued last and not yet being written (a burst of flushes is written once)."""
        self.timeline(conversation)  # this replica reads back the events of those it has
        queue = self._queue
        last = queue[-1] if len(queue) > 1 else None
        same = last is not None and (last.conversation, last.turn) == (conversation, turn)
        if last is not None and same and kind == last.kind == "partial":
            queue[-1] = _Pending(conversation, kind, data, turn, last.done)
            return last.done
        queue.append(_Pending(conversation, kind, data, turn))
        self._queued.set()
        return queue[-1].done

    async def written(self) -> None:
        """Until everything published so far is in the store (a clean stop waits for
        it, so a final said just before is not lost); what is published meanwhile is
        not waited for (streaming conversations keep the queue from ever emptying)."""
        last = self._queue or self._unread
        if last:
            await last[-1].done.wait()

    async def run(self) -> None:
        """Write the queued events in order, and read them back; for ever."""
        while True:
            if not self._queue:
                self._queued = anyio.Event()
                await self._queued.wait()
                continue
            pending = self._queue[0]
            while True:
                try:
                    await self.imports.before(pending.conversation, self.store, self._keep)
                    await self.store.append(
                        pending.conversation, pending.kind, pending.data, pending.turn, self._keep
                    )
                    break
                except Exception as exc:  # noqa: BLE001 - a store that restarts must not lose it
                    log.warning("web_event_unwritten", error=type(exc).__name__)
                    await anyio.sleep(RETRY_EVERY)
            self._unread.append(self._queue.popleft())
            if not self._queue or len(self._unread) >= READ_BACK:
                await self.read({p.conversation for p in self._unread})
                for done in self._unread:
                    done.done.set()
                self._unread = []

    async def follow(self, every: float = SAFETY_EVERY) -> None:
        """Read the events the other replicas write as they commit, and every ``every``
        seconds anyway; for ever."""
        async with anyio.create_task_group() as group:
            group.start_soon(self.store.listen, self._heard)
            while True:
                with anyio.move_on_after(every):
                    await self._woken.wait()
                self._woken = anyio.Event()  # before reading: what commits meanwhile wakes it
                try:
                    await self.read(list(self.timelines))
                except Exception as exc:  # noqa: BLE001 - try again at the next wake
                    log.warning("web_events_unreadable", error=type(exc).__name__)

    def _heard(self, conversation: str | None) -> None:
        """A conversation written on some replica (None: listening again, maybe after
        missing some): wake :meth:`follow` if this replica has it in memory."""
        if conversation is None:
            self.listening.set()
        if conversation is None or ConversationId(conversation) in self.timelines:
            self._woken.set()

    async def catch_up(self, conversation: ConversationId) -> None:
        """Read ``conversation``'s events now (a stream opening on this replica)."""
        self.timeline(conversation)
        await self.imports.before(conversation, self.store, self._keep)
        await self.read([conversation])

    async def read(self, conversations: Iterable[ConversationId]) -> None:
        timelines = self.timelines
        async with self._reading:  # one reader at a time: each event is taken once
            marks = {str(c): timelines[c].last_serial for c in conversations if c in timelines}
            for event in await self.store.after(marks):
                timeline = timelines[ConversationId(event.conversation)]
                timeline.take(event.seq, event.kind, event.data, event.turn)
