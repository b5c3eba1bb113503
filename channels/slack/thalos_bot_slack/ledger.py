"""What the channel must remember across a restart: the messages it has taken, the
ones acknowledged but not yet taken by the pump, and the threads that are conversations.

Slack delivers an event again when its acknowledgement did not arrive in 3 seconds or
the socket dropped first (``retry_attempt`` 1, 2, 3), and a mention in a channel comes
twice (a ``message`` and an ``app_mention`` event, with different event ids). So a
message is known by its channel and ``ts``, which every copy shares: the first copy
starts a turn, every later one is dropped. An acknowledged event is never sent again,
so the first copy is kept whole, *waiting*, until the pump takes the message (its files
fetched first): a stop or a crash before then leaves it to the next start, which hands
it over again. Kept in a small JSON file in the state directory (the newest few
thousand keys), written before the event is acknowledged and again as the pump takes
it, so a redelivery after a restart is recognised too.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import anyio
import structlog

from thalos_bot.channels.kept import read_json, write_private

log = structlog.get_logger(__name__)

KEEP_MESSAGES = 5_000
KEEP_THREADS = 2_000
KEEP_WAITING = 1_000


class Ledger:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._threads: OrderedDict[str, None] = OrderedDict()
        self._waiting: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = anyio.Lock()

    def load(self) -> None:
        data = {} if self.path is None else read_json(self.path)
        try:
            seen = [str(k) for k in data.get("seen", [])]
            threads = [str(k) for k in data.get("threads", [])]
            waiting = {str(k): dict(e) for k, e in data.get("waiting", {}).items()}
        except (TypeError, ValueError, AttributeError) as exc:
            log.warning("slack_ledger_unreadable", error=type(exc).__name__)
            return
        self._seen = OrderedDict.fromkeys(seen[-KEEP_MESSAGES:])
        self._threads = OrderedDict.fromkeys(threads[-KEEP_THREADS:])
        self._waiting = OrderedDict(waiting)

    def is_thread(self, channel: str, thread_ts: str) -> bool:
        return f"{channel}:{thread_ts}" in self._threads

    def take(
        self, channel: str, ts: str, event: dict[str, Any] | None, *, thread: str | None = None
    ) -> bool:
        """Note the message's ``event`` as waiting for the pump (None: nothing in it for
        the pump, taken at once) and the thread it starts; False when it came before
        (waiting, or taken)."""
        key = f"{channel}:{ts}"
        if key in self._seen or key in self._waiting:
            return False
        if event is None:
            _keep(self._seen, key, KEEP_MESSAGES)
        else:
            self._waiting[key] = event
        if len(self._waiting) > KEEP_WAITING:  # a pump that never reads
            log.warning("slack_waiting_forgotten", key=self._waiting.popitem(last=False)[0])
        if thread is not None:
            _keep(self._threads, f"{channel}:{thread}", KEEP_THREADS)
        return True

    async def taken(self, channel: str, ts: str) -> None:
        """The pump has the message (or it was refused, and said so): written down, so
        that no start hands it over again."""
        key = f"{channel}:{ts}"
        if self._waiting.pop(key, None) is not None:
            _keep(self._seen, key, KEEP_MESSAGES)
            await self.save()

    def waiting(self) -> list[dict[str, Any]]:
        """The events acknowledged that the pump did not take, oldest first."""
        return list(self._waiting.values())

    def forget(self, event: dict[str, Any]) -> None:
        """A waiting ``event`` no longer admitted (its sender no longer allowed)."""
        self._waiting.pop(f"{event.get('channel')}:{event.get('ts')}", None)

    async def save(self) -> None:
        if self.path is None:
            return
        data = {
            "seen": list(self._seen),
            "threads": list(self._threads),
            "waiting": dict(self._waiting),
        }
        async with self._lock:
            try:
                await anyio.to_thread.run_sync(write_private, self.path, data)
            except OSError as exc:
                log.warning("slack_ledger_not_written", error=type(exc).__name__)


def _keep(keys: OrderedDict[str, None], key: str, most: int) -> None:
    """``key`` as the newest of ``keys``, the oldest forgotten past ``most``."""
    keys[key] = None
    keys.move_to_end(key)
    while len(keys) > most:
        keys.popitem(last=False)
