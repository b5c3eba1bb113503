"""The page's history as versions before the store kept it: one file per conversation
in the state folder (``web/<digest>.jsonl``, finished turns only). Each is written into
the daemon's store before anything else of its conversation, the first time this
process reads or writes that conversation, and renamed ``.imported``: an upgrade loses
no page's history. Images and clips were not in those files (only their captions), so
they are left out. Replicas never wrote such files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import anyio
import structlog

from thalos_bot.channels.page_events import SharedPageEvents
from thalos_bot.domain.ids import ConversationId

log = structlog.get_logger(__name__)

KINDS = frozenset({"user", "notice", "activity", "turn", "final"})


class Imports:
    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        """Where the files were (None: nothing to import, as on replicas)."""
        self._done: set[ConversationId] = set()
        self._written: dict[ConversationId, int] = {}
        """Events of a file in the store already (a store error midway: tried again)."""
        self._lock = anyio.Lock()

    async def before(
        self, conversation: ConversationId, store: SharedPageEvents, keep: int
    ) -> None:
        """``conversation``'s old file in ``store`` first, once (a no-op after)."""
        if self.folder is None or conversation in self._done:
            return
        async with self._lock:  # one writer of a conversation's first events
            if conversation not in self._done:
                await self._import(self.folder, conversation, store, keep)
                self._done.add(conversation)

    async def _import(
        self, folder: Path, conversation: ConversationId, store: SharedPageEvents, keep: int
    ) -> None:
        path = folder / f"{hashlib.sha256(conversation.encode()).hexdigest()[:24]}.jsonl"
        try:
            text = await anyio.to_thread.run_sync(path.read_text, "utf-8")
        except FileNotFoundError:
            return
        except OSError as exc:  # the file stays: the next start tries again
            log.warning("web_history_not_imported", error=type(exc).__name__)
            return
        events = []
        for line in text.splitlines():
            try:
                raw = json.loads(line)
                kind, data, turn = str(raw["kind"]), dict(raw["data"]), raw.get("turn")
            except (ValueError, KeyError, TypeError):
                continue  # a line the old version could not read either
            if kind in KINDS:
                events.append((kind, data, turn))
        for kind, data, turn in events[self._written.get(conversation, 0) :]:
            await store.append(conversation, kind, data, turn, keep)
            self._written[conversation] = self._written.get(conversation, 0) + 1
        await anyio.to_thread.run_sync(path.rename, path.with_suffix(".imported"))
        log.info("web_history_imported", events=len(events))
