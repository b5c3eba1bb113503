"""One conversation's events, numbered, for every tab that shows it.

The numbers are the daemon's store's, per conversation (its SQLite file, or on replicas
the shared store): the timeline takes the events in as the store numbered them
(:meth:`Timeline.take`), and each has the id ``<epoch>-<n>``. An SSE stream sends it as
the event's ``id``, and a browser that reconnects names the last one it saw in
``Last-Event-ID``. :meth:`Timeline.since` then gives exactly what came after; an id of
another epoch (a page of a version before the store numbered them) or one older than
what is kept gets everything kept, after a ``reset`` that tells the page to clear
itself first. An id means the same event on every replica and after a restart, so a
browser reconnecting to another replica, or to the restarted daemon, resumes after it,
without a gap or a repeat.

A partial answer is one event that replaces the one before it: the log keeps only a
turn's latest partial, and drops it when the final arrives, so a tab opening mid-answer
gets the partial so far and then the rest, and the final exactly once.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import anyio

EPOCH = "s"
"""The epoch of the ids numbered by the store."""


@dataclass(frozen=True, slots=True)
class Event:
    serial: int
    kind: str
    data: dict[str, Any]
    turn: str | None
    sse: bytes = field(repr=False, compare=False)
    """The event as the stream sends it, encoded once for every stream."""

    @property
    def id(self) -> str:
        return f"{EPOCH}-{self.serial}"


RESET = f"event: reset\ndata: {json.dumps({'epoch': EPOCH})}\n\n".encode()
"""Tells a page to clear itself before the events that follow."""


class Timeline:
    def __init__(self, keep: int) -> None:
        self._events: deque[Event] = deque()
        self._keep = keep
        self._serial = 0
        self._trimmed = 0
        """The highest serial dropped for the bound (not replaced by a later one)."""
        self._open: set[str] = set()
        """Turns started and not finished: their ``turn`` event is never trimmed (it
        places the answer on a page that opens later); a finished turn is trimmed with
        all its events."""
        self._changed = anyio.Event()
        self.closed = False

    def take(self, serial: int, kind: str, data: dict[str, Any], turn: str | None) -> bool:
        """Add an event the store numbered and wake every stream; False when it is
        known already. A ``partial`` replaces the turn's previous partial; a ``final``
        drops it. Numbers may skip (partials the store replaced); the first taken into
        an empty timeline marks what came before as gone, so a page that saw less starts
        afresh."""
        if serial <= self._serial:
            return False
        if not self._events and self._serial == 0 and serial > 1:
            self._trimmed = serial - 1
        if turn is not None and kind in {"partial", "final"}:
            for old in [e for e in self._events if e.turn == turn and e.kind == "partial"]:
                self._events.remove(old)
        self._serial = serial
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        sse = f"id: {EPOCH}-{serial}\nevent: {kind}\ndata: {body}\n\n".encode()
        event = Event(serial, kind, data, turn, sse)
        self._events.append(event)
        opened = data.get("turn") if kind == "turn" else None
        if isinstance(opened, str):
            self._open.add(opened)
        elif kind == "final" and turn is not None:
            self._open.discard(turn)
        self._trim()
        self.wake()
        return True

    def _trim(self) -> None:
        while len(self._events) > self._keep:
            oldest = next(
                (
                    e
                    for e in self._events
                    if not (e.kind == "turn" and e.data["turn"] in self._open)
                ),
                None,
            )
            if oldest is None:
                return
            gone = [oldest]
            if oldest.kind == "turn":
                # A finished answer goes as a whole, so that no page shows it elsewhere.
                turn = oldest.data["turn"]
                gone += [e for e in self._events if e is not oldest and e.data.get("turn") == turn]
            for event in gone:
                self._events.remove(event)
                self._trimmed = max(self._trimmed, event.serial)

    def wake(self) -> None:
        """Wake every stream (with nothing new, each checks again whether it may go on:
        a login logged out)."""
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def close(self) -> None:
        """The daemon is stopping: every stream ends (the browser reconnects later)."""
        self.closed = True
        self.wake()

    def since(self, last_id: str | None) -> tuple[bool, list[Event]]:
        """(reset first?, the events after ``last_id``)."""
        serial = self._serial_of(last_id)
        if serial is None:
            return last_id is not None, list(self._events)
        if serial < self._trimmed:
            return True, list(self._events)
        newer: list[Event] = []
        for event in reversed(self._events):  # the newest few, without a full scan
            if event.serial <= serial:
                break
            newer.append(event)
        newer.reverse()
        return False, newer

    def _serial_of(self, last_id: str | None) -> int | None:
        if not last_id:
            return None
        epoch, _, number = last_id.strip().rpartition("-")
        if epoch != EPOCH or not number.isdigit() or int(number) > self._serial:
            return None
        return int(number)

    @property
    def last_serial(self) -> int:
        return self._serial

    def waiter(self) -> anyio.Event:
        """Set at the next append (take it before reading, so nothing slips between)."""
        return self._changed

    def events(self) -> list[Event]:
        return list(self._events)
