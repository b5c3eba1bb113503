"""The media store in the shared SQLite database (tables of ``0400_media``).

``created_at`` is when the bytes were last stored: pruning (:mod:`thalos_bot.media.prune`)
counts the retention from it."""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import cast

import anyio.to_thread

from thalos_bot.domain.attachments import AttachmentKind
from thalos_bot.media.store import MediaRef, StoredMedia, media_hash
from thalos_bot.storage.database import Database, encode_time, fetch_all, fetch_one

_CHUNK = 200
"""Hashes per ``IN (…)`` query (well under SQLite's variable limit)."""
_HASH_IN_THREAD = 1024 * 1024
"""Larger data is hashed in a worker thread (SHA-256 of a 20 MB PDF takes tens of ms)."""


class SqliteMediaStore:
    def __init__(self, db: Database, clock: Callable[[], datetime] | None = None) -> None:
        self._db = db
        self._clock = clock or (lambda: datetime.now(UTC))

    async def put(
        self,
        data: bytes,
        media_type: str,
        *,
        kind: AttachmentKind,
        origin: str = "",
        name: str = "",
    ) -> str:
        if len(data) > _HASH_IN_THREAD:
            digest = await anyio.to_thread.run_sync(media_hash, data)
        else:
            digest = media_hash(data)
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO media (hash, media_type, size, data, created_at)"
                " VALUES (?, ?, ?, ?, ?)"
                # Stored anew: the retention counts from now (see media.prune).
                " ON CONFLICT (hash) DO UPDATE SET created_at = excluded.created_at"
                " WHERE excluded.created_at > media.created_at",
                (digest, media_type, len(data), data, encode_time(self._clock())),
            )
            if origin:
                await conn.execute(
                    "INSERT INTO media_origins (origin, hash, kind, name) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (origin) DO UPDATE SET hash = excluded.hash,"
                    " kind = excluded.kind, name = excluded.name",
                    (origin, digest, kind, name),
                )
        return digest

    async def get_many(self, hashes: Collection[str]) -> dict[str, StoredMedia]:
        wanted = sorted(set(hashes))
        found: dict[str, StoredMedia] = {}
        async with self._db.read() as conn:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = await fetch_all(
                    conn,
                    f"SELECT hash, media_type, data FROM media WHERE hash IN ({marks})",  # noqa: S608
                    chunk,
                )
                for row in rows:
                    found[row["hash"]] = StoredMedia(row["hash"], row["media_type"], row["data"])
        return found

    async def find(self, origin: str) -> MediaRef | None:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT o.hash, o.kind, o.name, m.media_type, m.size FROM media_origins o"
                " JOIN media m ON m.hash = o.hash WHERE o.origin = ?",
                (origin,),
            )
        if row is None:
            return None
        return MediaRef(
            row["hash"],
            cast("AttachmentKind", row["kind"]),
            row["media_type"],
            row["size"],
            row["name"],
        )
