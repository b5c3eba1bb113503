"""The media store, run against every implementation: bytes kept once per content, an
origin key pointing at them (and moved when the origin is stored again), every byte
value round-tripping, and a missing hash simply absent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from thalos_bot.media.sqlite_store import SqliteMediaStore
from thalos_bot.media.store import MediaRef, MediaStore, MemoryMediaStore, media_hash
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.media import PgMediaStore

pytestmark = pytest.mark.anyio

EVERY_BYTE = bytes(range(256)) * 3
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def media(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MediaStore]:
    if request.param == "memory":
        yield MemoryMediaStore()
        return
    if request.param == "sqlite":
        async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
            yield SqliteMediaStore(db)
        return
    async with await PgDatabase.open(request.getfixturevalue("migrated_url")) as pg:
        yield PgMediaStore(pg)


async def test_bytes_are_kept_once_and_found_by_hash(media: MediaStore) -> None:
    first = await media.put(EVERY_BYTE, "application/pdf", kind="pdf")
    again = await media.put(EVERY_BYTE, "application/pdf", kind="pdf")
    other = await media.put(PNG, "image/png", kind="image")
    assert first == again == media_hash(EVERY_BYTE)
    found = await media.get_many([first, other, first, "0" * 64])
    assert set(found) == {first, other}
    assert (found[first].data, found[first].media_type, found[first].size) == (
        EVERY_BYTE,
        "application/pdf",
        len(EVERY_BYTE),
    )
    assert found[other].data == PNG
    assert await media.get_many([]) == {}


async def test_an_origin_points_at_the_latest_bytes_stored_for_it(media: MediaStore) -> None:
    assert await media.find("telegram:file-1") is None
    old = await media.put(PNG, "image/png", kind="image", origin="telegram:file-1", name="a.png")
    assert await media.find("telegram:file-1") == MediaRef(
        old, "image", "image/png", len(PNG), "a.png"
    )
    new = await media.put(
        EVERY_BYTE, "application/pdf", kind="pdf", origin="telegram:file-1", name="b.pdf"
    )
    assert await media.find("telegram:file-1") == MediaRef(
        new, "pdf", "application/pdf", len(EVERY_BYTE), "b.pdf"
    )
    assert set(await media.get_many([old, new])) == {old, new}, "the old bytes stay stored"
