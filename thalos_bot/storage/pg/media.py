"""The media store on PostgreSQL (the tables of ``0400_media``, bytes as ``bytea``):
the :class:`~thalos_bot.media.store.MediaStore` port, like
:class:`~thalos_bot.media.sqlite_store.SqliteMediaStore`."""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import cast

from thalos_bot.domain.attachments import AttachmentKind
from thalos_bot.media.store import MediaRef, StoredMedia, media_hash
from thalos_bot.storage.database import as_utc
from thalos_bot.storage.pg.database import PgDatabase, fetch_all, fetch_one


class PgMediaStore:
    def __init__(self, db: PgDatabase, clock: Callable[[], datetime] | None = None) -> None:
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
        digest = media_hash(data)
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO media (hash, media_type, size, data, created_at)"
                " VALUES (%s, %s, %s, %s, %s)"
                # Stored anew: its age starts again, as in SQLite (see media.prune).
                " ON CONFLICT (hash) DO UPDATE SET created_at = excluded.created_at",
                (digest, media_type, len(data), data, as_utc(self._clock())),
            )
            if origin:
                await conn.execute(
                    "INSERT INTO media_origins (origin, hash, kind, name) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (origin) DO UPDATE SET hash = excluded.hash,"
                    " kind = excluded.kind, name = excluded.name",
                    (origin, digest, kind, name),
                )
        return digest

    async def get_many(self, hashes: Collection[str]) -> dict[str, StoredMedia]:
        wanted = sorted(set(hashes))
        if not wanted:
            return {}
        async with self._db.read() as conn:
            rows = await fetch_all(
                conn,
                "SELECT hash, media_type, data FROM media WHERE hash = ANY(%s)",
                (wanted,),
            )
        return {
            row["hash"]: StoredMedia(row["hash"], row["media_type"], bytes(row["data"]))
            for row in rows
        }

    async def find(self, origin: str) -> MediaRef | None:
        async with self._db.read() as conn:
            row = await fetch_one(
                conn,
                "SELECT o.hash, o.kind, o.name, m.media_type, m.size FROM media_origins o"
                " JOIN media m ON m.hash = o.hash WHERE o.origin = %s",
                (origin,),
            )
        if row is None:
            return None
        return MediaRef(
            row["hash"],
            cast("AttachmentKind", row["kind"]),
            row["media_type"],
            int(row["size"]),
            row["name"],
        )
