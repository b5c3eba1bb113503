"""The linked identities' store, the same on SQLite and PostgreSQL: a code works once and
only before it expires; a new link replaces an identity's old one; unlinking keeps the
record."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.storage.backends import BACKENDS, on
from thalos_bot.storage.links import PeopleLinks, SqlitePeopleLinks
from thalos_bot.storage.pg.links import PgPeopleLinks

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=BACKENDS)
async def links(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[PeopleLinks]:
    async with on(request, tmp_path, SqlitePeopleLinks, PgPeopleLinks) as opened:
        yield opened


async def test_a_code_works_once_and_only_in_time(links: PeopleLinks) -> None:
    await links.issue("ana", "ABCD-EFGH", NOW + timedelta(minutes=10))
    await links.issue("ben", "JKMN-PQRS", NOW + timedelta(minutes=10))
    assert await links.claim("WXYZ-2345", "discord", "1", NOW) is None  # unknown
    assert await links.claim("abcd efgh", "discord", "1", NOW) == "ana"  # as typed
    assert await links.claim("ABCD-EFGH", "discord", "2", NOW) is None  # used
    late = NOW + timedelta(minutes=11)
    assert await links.claim("JKMN-PQRS", "discord", "2", late) is None  # expired
    assert await links.principal("discord", "1") == "ana"
    assert await links.principal("discord", "2") is None
    assert await links.principal("slack", "1") is None


async def test_a_new_link_replaces_the_old_and_unlinking_keeps_the_record(
    links: PeopleLinks,
) -> None:
    await links.issue("ana", "AAAA-AAAA", NOW + timedelta(minutes=10))
    await links.issue("ben", "BBBB-BBBB", NOW + timedelta(minutes=10))
    assert await links.claim("AAAA-AAAA", "matrix", "@x:y", NOW) == "ana"
    later = NOW + timedelta(minutes=1)
    assert await links.claim("BBBB-BBBB", "matrix", "@x:y", later) == "ben"
    assert await links.principal("matrix", "@x:y") == "ben"
    assert await links.unlink("matrix", "@x:y", later) == "ben"
    assert await links.unlink("matrix", "@x:y", later) is None
    assert await links.principal("matrix", "@x:y") is None
    history = await links.listing()
    assert [(link.principal, link.unlinked_at is not None) for link in history] == [
        ("ana", True),
        ("ben", True),
    ]
