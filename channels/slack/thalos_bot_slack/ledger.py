"""What the channel must remember across a restart: the messages it has taken, the
events acknowledged that the pump has not taken yet (the kit's
:class:`~thalos_bot.channels.waiting.Waiting`: Slack never sends them again), and the
threads that are conversations.

Slack delivers an event again when its acknowledgement did not arrive in 3 seconds or
the socket dropped first (``retry_attempt`` 1, 2, 3), and a mention in a channel comes
twice (a ``message`` and an ``app_mention`` event, with different event ids). So a
message is known by its channel and ``ts``, which every copy shares: the first copy
starts a turn, every later one is dropped. The keys (the newest few thousand) and the
threads are kept in a small JSON file in the state directory, written before the event
is acknowledged, so a redelivery after a restart is recognised too.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import structlog

from thalos_bot.channels.admission.seen import Seen
from thalos_bot.channels.kept import read_json, write_private
from thalos_bot.channels.waiting import Waiting

log = structlog.get_logger(__name__)

KEEP_MESSAGES = 5_000
KEEP_THREADS = 2_000


class Ledger:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._seen = Seen(KEEP_MESSAGES)
        self._threads = Seen(KEEP_THREADS)
        self._lock = anyio.Lock()
        self.waiting = Waiting("slack", self.save)

    def load(self) -> None:
        data = {} if self.path is None else read_json(self.path)
        try:
            seen = [str(k) for k in data.get("seen", [])]
            threads = [str(k) for k in data.get("threads", [])]
        except TypeError as exc:
            log.warning("slack_ledger_unreadable", error=type(exc).__name__)
            return
        self._seen = Seen(KEEP_MESSAGES, seen)
        self._threads = Seen(KEEP_THREADS, threads)
        self.waiting.load(data.get("waiting"))

    def is_thread(self, channel: str, thread_ts: str) -> bool:
        return f"{channel}:{thread_ts}" in self._threads

    def take(self, channel: str, ts: str, *, thread: str | None = None) -> bool:
        """Note the message (and the thread it starts); False when it was taken before."""
        if not self._seen.first_time(f"{channel}:{ts}"):
            return False
        if thread is not None:
            self._threads.first_time(f"{channel}:{thread}")
        return True

    async def save(self) -> None:
        if self.path is None:
            return
        waiting = self.waiting.dump()
        data = {"seen": list(self._seen), "threads": list(self._threads), "waiting": waiting}
        async with self._lock:
            try:
                await anyio.to_thread.run_sync(write_private, self.path, data)
            except OSError as exc:
                log.warning("slack_ledger_not_written", error=type(exc).__name__)
