"""A conversation's finished events, kept in the state folder, so that a page opened
after the daemon restarted still shows the conversation.

What is kept is what the timeline holds of finished turns (:meth:`Timeline.finished`):
the person's messages, final answers (with the ``turn`` event that places each),
notices, tool activity and tool images' captions (the images stay in memory). Partial
answers, open questions and the answer still being written are not: they belong to a
process that is gone. One file per conversation (``web/<digest>.jsonl``, 0600), as
bounded as the timeline, written anew in a worker thread (:meth:`History.run`) once per
burst of finished events. A final or a file whose outbox row is confirmed next waits
until the file holds it (:meth:`History.kept`): a kill after the confirmation loses
nothing the page showed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import structlog

from thalos_bot.domain.ids import ConversationId
from thalos_bot.storage.private import ensure_private_dir, ensure_private_file
from thalos_bot_web.timeline import Event, Timeline

log = structlog.get_logger(__name__)

KEPT_KINDS = frozenset({"user", "notice", "activity", "image", "audio", "turn", "final"})


@dataclass(frozen=True, slots=True)
class Kept:
    kind: str
    data: dict[str, Any]
    turn: str | None = None


class History:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._due: dict[ConversationId, Timeline] = {}
        """The conversations whose file is behind their timeline."""
        self._wake: anyio.Event | None = None
        """Set when a file is due; None while :meth:`run` does not run."""
        self._asked: dict[ConversationId, int] = {}
        """The serial of each conversation's latest event its file is to hold."""
        self._held: dict[ConversationId, int] = {}
        """The serial its timeline had at the snapshot last written (a write that failed,
        logged, counts)."""
        self._wrote = anyio.Event()
        """Set at each write (then made anew)."""

    def _path(self, conversation: ConversationId) -> Path:
        digest = hashlib.sha256(conversation.encode()).hexdigest()[:24]
        return self.folder / f"{digest}.jsonl"

    def load(self, conversation: ConversationId) -> list[Kept]:
        """The finished events of ``conversation`` (an unreadable line is skipped, and
        said once)."""
        try:
            lines = self._path(conversation).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        except OSError as exc:
            log.warning("web_history_unreadable", error=type(exc).__name__)
            return []
        kept: list[Kept] = []
        bad = 0
        for line in lines:
            try:
                raw = json.loads(line)
                data = dict(raw["data"])
                if raw["kind"] in {"image", "audio"}:
                    data["url"] = ""  # the file itself went with the process
                kept.append(Kept(str(raw["kind"]), data, raw.get("turn")))
            except (ValueError, KeyError, TypeError):
                bad += 1
        if bad:
            log.warning("web_history_lines_skipped", count=bad)
        return kept

    def follow(self, conversation: ConversationId, timeline: Timeline) -> None:
        """From now on, write ``timeline``'s finished events whenever it gains one (a
        turn's events at its final)."""

        def appended(event: Event) -> None:
            if event.kind in KEPT_KINDS and event.kind not in {"turn", "activity"}:
                self._asked[conversation] = event.serial
                self._due[conversation] = timeline
                if self._wake is not None:
                    self._wake.set()
                else:  # a page built apart from the plug-in: written at once
                    self._write_now(conversation, timeline)

        timeline.on_append = appended

    async def run(self) -> None:
        """Write the files behind their timelines, each in a worker thread; for ever.
        Cancelled, it writes what is still due before it returns."""
        self._wake = wake = anyio.Event()
        try:
            while True:
                await wake.wait()
                self._wake = wake = anyio.Event()  # before the snapshot: what follows wakes it
                while self._due:
                    conversation, timeline = self._due.popitem()
                    serial, events = timeline.last_serial, timeline.finished()
                    try:
                        await anyio.to_thread.run_sync(self._write, conversation, events)
                    except BaseException:
                        self._due.setdefault(conversation, timeline)  # maybe unwritten
                        raise
                    self._written(conversation, serial)
        finally:
            self._wake = None
            while self._due:  # the stop: the last events, before the process goes
                self._write_now(*self._due.popitem())

    async def kept(self, conversation: ConversationId) -> None:
        """Until ``conversation``'s file holds the events appended so far (a final or a
        file whose outbox row is confirmed next), as :meth:`run` writes it."""
        asked = self._asked.get(conversation, 0)
        while self._held.get(conversation, 0) < asked:
            await self._wrote.wait()

    def _write_now(self, conversation: ConversationId, timeline: Timeline) -> None:
        serial = timeline.last_serial
        self._write(conversation, timeline.finished())
        self._written(conversation, serial)

    def _written(self, conversation: ConversationId, serial: int) -> None:
        self._held[conversation] = serial
        self._wrote.set()
        self._wrote = anyio.Event()

    def _write(self, conversation: ConversationId, events: list[Event]) -> None:
        path = self._path(conversation)
        fresh = path.with_suffix(".new")
        try:
            ensure_private_dir(self.folder)
            ensure_private_file(fresh)
            text = "".join(_line(e) for e in events if e.kind in KEPT_KINDS)
            fresh.write_text(text, encoding="utf-8")
            fresh.replace(path)
        except OSError as exc:
            log.warning("web_history_not_kept", error=type(exc).__name__)


def _line(event: Event) -> str:
    body = {"kind": event.kind, "data": event.data, "turn": event.turn}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n"
