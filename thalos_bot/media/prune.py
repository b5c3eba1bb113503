"""Pruning the media store: bytes no live session can still need.

Media are stored once by content hash and named by hash from history blocks
(:class:`~thalos_bot.domain.messages.ImageBlock`, ``DocumentBlock``). A row goes once
all of these hold:

* it was last stored (``created_at``: set when first stored, and again whenever the
  same bytes are stored anew) before the cut-off, ``retention`` ago;
* no session that is still open names it in its history;
* no session closed within the retention names it either (so a conversation that just
  ended can still be looked at, and what it showed stays for the retention).

A text file's copy (kept only so that a reply to the file can re-attach it; the history
holds its text) is pruned by its age alone. Its origin keys go with it (``ON DELETE
CASCADE``): a later reply to that message says the file is no longer stored.

The check and the delete run in one write transaction, so no turn can commit a new
reference in between; a turn that stores a file refreshes its ``created_at`` first, so
its row is never a candidate while the turn runs. The freed pages stay in the database
file and are reused by later rows (the file does not shrink).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import anyio
import structlog

from thalos_bot.domain.clock import utc_now
from thalos_bot.storage.database import (
    Database,
    as_utc,
    decode_time,
    encode_time,
    fetch_all,
)

log = structlog.get_logger(__name__)

PRUNE_EVERY = 3600.0
"""Seconds between the daemon's background prunes."""
FIRST_AFTER = 60.0
"""The daemon's first prune waits this long after start-up: the first turns come first
(a prune holds the database's write lock while it scans the histories)."""

_REFERENCED = """
SELECT DISTINCT json_extract(block.value, '$.media_hash') AS hash
FROM sessions AS s
JOIN session_messages AS m ON m.session_id = s.id,
     json_each(m.content, '$.content') AS block
WHERE (s.status = 'open' OR s.updated_at >= ?)
  AND m.content LIKE '%"media_hash"%'
  AND json_extract(block.value, '$.type') IN ('image', 'document')
"""

_CANDIDATES = f"""
SELECT m.hash, m.media_type, m.size, m.created_at,
       (SELECT o.kind FROM media_origins AS o WHERE o.hash = m.hash LIMIT 1) AS kind
FROM media AS m
WHERE m.created_at < ?
  AND m.hash NOT IN ({_REFERENCED})
ORDER BY m.created_at, m.hash
"""  # noqa: S608 - constant SQL, no input in it


@dataclass(frozen=True, slots=True)
class PrunedMedia:
    hash: str
    media_type: str
    size: int
    stored_at: datetime
    kind: str | None
    """``image``, ``pdf`` or ``text`` when an origin key says so, else ``None``."""


@dataclass(frozen=True, slots=True)
class PruneReport:
    removed: tuple[PrunedMedia, ...]
    cutoff: datetime
    dry_run: bool = False

    @property
    def bytes_freed(self) -> int:
        return sum(item.size for item in self.removed)


class Pruner(ABC):
    """The rule, the report and the background rounds; the engine's subclass finds (and
    removes) the rows."""

    def __init__(self, retention: float, clock: Callable[[], datetime] = utc_now) -> None:
        if not (retention > 0 and math.isfinite(retention)):
            raise ValueError("retention must be a positive number of seconds")
        self.retention = retention
        self._clock = clock

    def cutoff(self) -> datetime:
        return self._clock() - timedelta(seconds=self.retention)

    @abstractmethod
    async def _prune_rows(self, cutoff: datetime, *, dry_run: bool) -> Sequence[Any]:
        """The rows pruned (or, with ``dry_run``, that would be): ``hash``,
        ``media_type``, ``size``, ``created_at`` and ``kind``."""

    async def prune(self, *, dry_run: bool = False) -> PruneReport:
        """Remove (or with ``dry_run`` only list) what no live session references."""
        cutoff = self.cutoff()
        rows = await self._prune_rows(cutoff, dry_run=dry_run)
        removed = tuple(
            PrunedMedia(
                row["hash"],
                row["media_type"],
                int(row["size"]),
                as_utc(row["created_at"])
                if isinstance(row["created_at"], datetime)
                else decode_time(row["created_at"]),
                row["kind"],
            )
            for row in rows
        )
        report = PruneReport(removed, cutoff, dry_run)
        if removed and not dry_run:
            log.info(
                "media_pruned",
                rows=len(removed),
                bytes=report.bytes_freed,
                retention_s=self.retention,
            )
        return report

    async def run(
        self,
        *,
        first_after: float = FIRST_AFTER,
        every: float = PRUNE_EVERY,
        rounds: int | None = None,
    ) -> None:
        """Prune ``first_after`` seconds from now, then every ``every`` seconds, until
        cancelled (or ``rounds`` are done); a failure is logged and the next round tries
        again."""
        await anyio.sleep(first_after)
        done = 0
        while rounds is None or done < rounds:
            if done:
                await anyio.sleep(every)
            try:
                await self.prune()
            except Exception:
                log.exception("media_prune_failed")
            done += 1


class MediaPruner(Pruner):
    """Prunes the ``media`` table of the SQLite ``db``; ``retention`` in seconds."""

    def __init__(
        self, db: Database, retention: float, clock: Callable[[], datetime] = utc_now
    ) -> None:
        super().__init__(retention, clock)
        self._db = db

    async def _prune_rows(self, cutoff: datetime, *, dry_run: bool) -> Sequence[Any]:
        params = (encode_time(cutoff),) * 2  # last stored before; closed before
        if dry_run:
            async with self._db.read() as conn:
                return await fetch_all(conn, _CANDIDATES, params)
        async with self._db.transaction() as conn:
            rows = await fetch_all(conn, _CANDIDATES, params)
            await conn.executemany(
                "DELETE FROM media WHERE hash = ?", [(row["hash"],) for row in rows]
            )
        return rows
