"""The media store port: bytes kept once, by content hash.

History blocks name media by hash (:class:`~thalos_bot.domain.messages.ImageBlock`), so
a conversation with fifty photos does not copy them into every row, and the same photo
sent twice is stored once. An origin key (a channel's id for a file) maps to a hash so
that a reply can re-attach what it points at while it is still stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from thalos_bot.domain.attachments import AttachmentKind


def media_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class StoredMedia:
    hash: str
    media_type: str
    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True, slots=True)
class MediaRef:
    """What an origin key points at (no bytes)."""

    hash: str
    kind: AttachmentKind
    media_type: str
    size: int
    name: str = ""


class MediaStore(Protocol):
    async def put(
        self,
        data: bytes,
        media_type: str,
        *,
        kind: AttachmentKind,
        origin: str = "",
        name: str = "",
    ) -> str:
        """Store ``data`` (once per content) and return its hash; ``origin``, when
        given, then points at it."""
        ...

    async def get_many(self, hashes: Collection[str]) -> dict[str, StoredMedia]:
        """The stored ones among ``hashes``; a missing hash is simply absent."""
        ...

    async def find(self, origin: str) -> MediaRef | None: ...


class MemoryMediaStore:
    """In-process store for tests and for a runtime built without a database."""

    def __init__(self) -> None:
        self._items: dict[str, StoredMedia] = {}
        self._origins: dict[str, MediaRef] = {}

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
        self._items.setdefault(digest, StoredMedia(digest, media_type, data))
        if origin:
            self._origins[origin] = MediaRef(digest, kind, media_type, len(data), name)
        return digest

    async def get_many(self, hashes: Collection[str]) -> dict[str, StoredMedia]:
        return {h: self._items[h] for h in hashes if h in self._items}

    async def find(self, origin: str) -> MediaRef | None:
        ref = self._origins.get(origin)
        return ref if ref is not None and ref.hash in self._items else None

    def forget(self, digest: str) -> None:
        """Drop stored bytes (what a pruning job would do)."""
        self._items.pop(digest, None)

    @property
    def stored_bytes(self) -> int:
        return sum(item.size for item in self._items.values())
