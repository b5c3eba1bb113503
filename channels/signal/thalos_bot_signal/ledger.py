"""The probe of a send in doubt: did the message arrive after all?

A send whose answer was lost has no timestamp to look up, and signal-cli keeps no
history to ask; but the recipients' delivery receipts and our own account's sync
transcripts name our messages by their timestamps. A send in doubt arrived if a
timestamp no answered send has was heard from its chat at or after it began.

The beginnings and what was heard are kept (:class:`~thalos_bot.channels.kept.KeptState`)
in the state folder and, on replicas, beside the connection's lease, each beginning
before its send: a restarted daemon, or the replica that takes the connection over,
settles the doubt the same way.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque

import anyio
import structlog

from thalos_bot.channels.kept import KeptState
from thalos_bot.channels.waiting import Waiting

log = structlog.get_logger(__name__)

KEEP_ATTEMPTS = 256
KEEP_HEARD = 1024
SKEW_MS = 2000
"""Clock slack between our start of a send and the timestamp the daemon gives it."""


class NotOwnerError(Exception):
    """Another replica holds the connection now: this one sends nothing more."""


class Ledger:
    def __init__(self, kept: KeptState, *, window_ms: int) -> None:
        self._kept = kept
        self._window = window_ms
        self._attempts: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._answered: deque[int] = deque(maxlen=KEEP_HEARD)
        self._heard: deque[tuple[frozenset[str], int]] = deque(maxlen=KEEP_HEARD)
        """Each timestamp heard, with the chat ids it may be of (a sender's number and
        UUID, or a group id)."""
        self._changed = anyio.Event()
        self.waiting = Waiting("signal", self._save)
        """The messages received that the pump has not taken yet (signal-cli never
        hands them out again)."""

    async def open(self) -> None:
        saved = await self._kept.load()
        try:
            for key, (chat, began) in saved.get("attempts", {}).items():
                self._attempts[str(key)] = (str(chat), int(began))
            for who, timestamp in saved.get("heard", []):
                self._heard.append((frozenset(map(str, who)), int(timestamp)))
            self._answered.extend(int(t) for t in saved.get("answered", []))
            self.waiting.load(saved.get("waiting"))
        except (ValueError, TypeError, AttributeError):
            log.warning("signal_ledger_unreadable")

    async def attempt(self, key: str, chat: str) -> None:
        """A send with ``key`` to ``chat`` begins (its first try counts); raises
        :class:`NotOwnerError` when this replica lost the connection."""
        if key not in self._attempts:
            self._attempts[key] = (chat, time.time_ns() // 1_000_000)
            while len(self._attempts) > KEEP_ATTEMPTS:
                self._attempts.popitem(last=False)
            if not await self._save():
                raise NotOwnerError

    def answered(self, timestamp: int) -> None:
        """Kept with the next save (a receipt of it, heard and kept, comes after)."""
        self._answered.append(timestamp)

    async def heard(self, who: set[str], timestamps: list[int]) -> None:
        for timestamp in timestamps:
            self._heard.append((frozenset(who), timestamp))
        self._changed.set()
        self._changed = anyio.Event()
        await self._save()

    def arrived(self, chat: str, key: str) -> int | None:
        """The timestamp of the message sent with ``key``, if it was heard of."""
        where, began = self._attempts.get(key, ("", 0))
        if where != chat:
            return None
        floor, ceiling = began - SKEW_MS, began + self._window
        answered = set(self._answered)
        found = (
            stamp
            for who, stamp in self._heard
            if chat in who and floor <= stamp <= ceiling and stamp not in answered
        )
        return next(found, None)

    async def wait_for(self, chat: str, key: str, seconds: float) -> int | None:
        """:meth:`arrived`, waiting up to ``seconds`` for something to be heard."""
        with anyio.move_on_after(seconds):
            while (found := self.arrived(chat, key)) is None:
                await self._changed.wait()
            return found
        return self.arrived(chat, key)

    async def _save(self) -> bool:
        """False when another replica holds the connection (nothing was written)."""
        saved = {
            "attempts": {key: list(value) for key, value in self._attempts.items()},
            "heard": [[sorted(who), stamp] for who, stamp in self._heard],
            "answered": list(self._answered),
            "waiting": self.waiting.dump(),
        }
        try:
            kept = await self._kept.save(saved)
        except Exception as exc:  # noqa: BLE001 - the file or the store: kept in memory
            log.warning("signal_ledger_unsaved", error=type(exc).__name__)
            return True
        if not kept:
            log.warning("signal_ledger_fenced")  # another replica holds the connection
        return kept
