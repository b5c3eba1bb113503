"""The probe of a send in doubt: did the message arrive after all?

signal-cli's ``send`` answers with the message's timestamp, which is its id on Signal;
a send whose answer was lost (the daemon restarted mid-call, the request timed out) has
no timestamp to look up, and signal-cli keeps no history to ask. Two things do name our
messages by that timestamp once they exist: the **delivery receipts** each recipient's
device sends back (``receiptMessage.timestamps``), and the **sync transcripts** of our
own account (``syncMessage.sentMessage``, which a device of the account hears when
another of its devices sent). The ledger keeps, per key, when its send began, the
timestamps of the sends that did answer, and what was heard; a send in doubt arrived if
a timestamp no answered send has was heard from that chat's people at or after it began.

Both the beginnings and what was heard are written to a small file in the state folder,
so a daemon killed mid-send settles the doubt the same way after its restart.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from pathlib import Path

import anyio
import structlog

log = structlog.get_logger(__name__)

KEEP_ATTEMPTS = 256
KEEP_HEARD = 1024
SKEW_MS = 2000
"""Clock slack between our start of a send and the timestamp the daemon gives it (the
same machine, normally; a daemon elsewhere may run a little behind)."""


@dataclass(frozen=True, slots=True)
class Heard:
    who: frozenset[str]
    """The chat ids it may be of: the sender's number and UUID, or a group id."""
    timestamp: int


class Ledger:
    def __init__(self, path: Path | None, *, window_ms: int) -> None:
        self._path = path
        self._window = window_ms
        self._attempts: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._answered: deque[int] = deque(maxlen=KEEP_HEARD)
        self._heard: deque[Heard] = deque(maxlen=KEEP_HEARD)
        self._changed = anyio.Event()
        self._load()

    def attempt(self, key: str, chat: str) -> None:
        """A send with ``key`` to ``chat`` begins (its first try counts)."""
        if key not in self._attempts:
            self._attempts[key] = (chat, _now_ms())
            while len(self._attempts) > KEEP_ATTEMPTS:
                self._attempts.popitem(last=False)
            self._save()

    def answered(self, timestamp: int) -> None:
        self._answered.append(timestamp)
        self._save()

    def heard(self, who: set[str], timestamps: list[int]) -> None:
        for timestamp in timestamps:
            self._heard.append(Heard(frozenset(who), timestamp))
        self._save()
        self._changed.set()
        self._changed = anyio.Event()

    def arrived(self, chat: str, key: str) -> int | None:
        """The timestamp of the message sent with ``key``, if it was heard of."""
        attempt = self._attempts.get(key)
        if attempt is None:
            return None
        where, began = attempt
        if where != chat:
            return None
        floor, ceiling = began - SKEW_MS, began + self._window
        answered = set(self._answered)
        for heard in self._heard:
            if (
                chat in heard.who
                and floor <= heard.timestamp <= ceiling
                and heard.timestamp not in answered
            ):
                return heard.timestamp
        return None

    async def wait_for(self, chat: str, key: str, seconds: float) -> int | None:
        """:meth:`arrived`, waiting up to ``seconds`` for something to be heard."""
        with anyio.move_on_after(seconds):
            while True:
                found = self.arrived(chat, key)
                if found is not None:
                    return found
                await self._changed.wait()
        return self.arrived(chat, key)

    def _load(self) -> None:
        if self._path is None or not self._path.is_file():
            return
        try:
            saved = json.loads(self._path.read_text(encoding="utf-8"))
            for key, (chat, began) in saved.get("attempts", {}).items():
                self._attempts[str(key)] = (str(chat), int(began))
            for who, timestamp in saved.get("heard", []):
                self._heard.append(Heard(frozenset(map(str, who)), int(timestamp)))
            self._answered.extend(int(t) for t in saved.get("answered", []))
        except (OSError, ValueError, TypeError, AttributeError):
            log.warning("signal_ledger_unreadable")

    def _save(self) -> None:
        if self._path is None:
            return
        saved = {
            "attempts": {key: list(value) for key, value in self._attempts.items()},
            "heard": [[sorted(h.who), h.timestamp] for h in self._heard],
            "answered": list(self._answered),
        }
        part = self._path.with_suffix(".part")
        try:
            part.write_text(json.dumps(saved), encoding="utf-8")
            part.replace(self._path)
        except OSError:
            log.warning("signal_ledger_unsaved")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
