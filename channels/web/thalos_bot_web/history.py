"""A conversation's finished events, kept in the state folder, so that a page opened
after the daemon restarted still shows the conversation.

What is kept is what a page shows once a turn is over: the person's messages, final
answers (with the ``turn`` event that places each), notices, tool activity and tool
images' captions (the images themselves stay in memory; a kept one shows its caption).
Partial answers, open questions and the answer still being written are not: they belong
to a process that is gone. One file per conversation (``web/<digest>.jsonl``, 0600, the
name a digest of the conversation id), one event a line; the newest ``keep`` are read
back, and the file is rewritten once it holds twice that.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from thalos_bot.domain.ids import ConversationId
from thalos_bot.storage.private import ensure_private_dir, ensure_private_file

log = structlog.get_logger(__name__)

KEPT_KINDS = frozenset({"user", "notice", "activity", "image", "audio", "turn", "final"})


@dataclass(frozen=True, slots=True)
class Kept:
    kind: str
    data: dict[str, Any]
    turn: str | None = None


@dataclass
class History:
    folder: Path
    keep: int
    _lines: dict[ConversationId, int] = field(default_factory=dict)
    _pending: dict[ConversationId, dict[str, list[Kept]]] = field(default_factory=dict)
    """Per conversation, the events of turns not finished yet (written at the final)."""

    def _path(self, conversation: ConversationId) -> Path:
        digest = hashlib.sha256(conversation.encode()).hexdigest()[:24]
        return self.folder / f"{digest}.jsonl"

    def load(self, conversation: ConversationId) -> list[Kept]:
        """The newest ``keep`` finished events of ``conversation`` (an unreadable line
        is skipped, and said once)."""
        path = self._path(conversation)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        except OSError as exc:
            log.warning("web_history_unreadable", error=type(exc).__name__)
            return []
        self._lines[conversation] = len(lines)
        kept: list[Kept] = []
        bad = 0
        for line in lines[-self.keep :]:
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
        return _whole_turns(kept)

    def note(self, conversation: ConversationId, event: Kept) -> None:
        """Keep ``event`` if a later page should see it; a turn's events wait for its
        final, so that a turn cut off by a restart leaves nothing half-shown."""
        if event.kind not in KEPT_KINDS:
            return
        turn = event.data.get("turn") if event.kind == "turn" else event.turn
        if event.kind == "activity":
            turn = event.data.get("turn")
        pending = self._pending.setdefault(conversation, {})
        if isinstance(turn, str) and event.kind != "final":
            pending.setdefault(turn, []).append(event)
            return
        events = (pending.pop(turn, []) if isinstance(turn, str) else []) + [event]
        if event.kind == "final" and not any(e.kind == "turn" for e in events):
            events.insert(0, Kept("turn", {"turn": turn}))
        self._write(conversation, events)

    def _write(self, conversation: ConversationId, events: list[Kept]) -> None:
        path = self._path(conversation)
        try:
            ensure_private_dir(self.folder)
            ensure_private_file(path)
            count = self._lines.get(conversation)
            if count is None:
                count = len(path.read_text(encoding="utf-8").splitlines())
            lines = [_line(e) for e in events]
            if count + len(lines) > 2 * self.keep:
                kept = self.load(conversation) + events
                path.write_text("".join(_line(e) for e in kept[-self.keep :]), encoding="utf-8")
                self._lines[conversation] = min(len(kept), self.keep)
                return
            with path.open("a", encoding="utf-8") as file:
                file.write("".join(lines))
            self._lines[conversation] = count + len(lines)
        except OSError as exc:
            log.warning("web_history_not_kept", error=type(exc).__name__)


def _line(event: Kept) -> str:
    body = {"kind": event.kind, "data": event.data, "turn": event.turn}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n"


def _whole_turns(events: list[Kept]) -> list[Kept]:
    """Drop the events of a turn whose ``turn`` event was cut off by the bound."""
    placed = {e.data.get("turn") for e in events if e.kind == "turn"}
    out: list[Kept] = []
    for event in events:
        turn = event.turn if event.kind == "final" else event.data.get("turn")
        if event.kind in {"final", "activity"} and turn not in placed:
            continue
        out.append(event)
    return out
