"""The page's finals through the delivery engine on replicas, on a real PostgreSQL: a
final written to the shared store by one replica (which died before its outbox row was
confirmed) is found there by the replica that takes the row over, so it is shown once;
and a final no replica wrote is written by the one that takes it over."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from tests.cluster.test_web_events import OWNER, db, replica
from tests.web.test_engine_finals import Journal
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot_web.adapter import WebAdapter
from thalos_bot_web.wire import page_engine

pytestmark = pytest.mark.anyio
__all__ = ["db"]
FINAL = "The answer."


@pytest.fixture
async def page(db: PgDatabase) -> AsyncIterator[tuple[WebAdapter, WebAdapter]]:
    """Two replicas' pages, each with its engine and its relay running."""
    pages = (replica(db)[0], replica(db)[0])
    async with anyio.create_task_group() as group:
        for adapter in pages:
            assert adapter.relay is not None
            group.start_soon(adapter.relay.run)
            adapter.engine = page_engine(adapter, group)
        yield pages
        group.cancel_scope.cancel()


def finals(adapter: WebAdapter) -> list[str]:
    return [e.data["html"] for e in adapter.timeline(OWNER).events() if e.kind == "final"]


@pytest.mark.parametrize("written", [True, False], ids=["written, then died", "died first"])
async def test_a_final_taken_over_by_another_replica_is_shown_once(
    page: tuple[WebAdapter, WebAdapter], written: bool
) -> None:
    first, second = page
    journal = Journal(hang="confirm" if written else "save")
    with anyio.fail_after(20):
        await first.deliver_final(OWNER, FINAL, journal, ends_turn=False)
        while "key" not in journal.progress or (written and not finals(first)):
            await anyio.sleep(0.02)
        # The first replica is gone: its row (and its journal) is taken over.
        again = Journal(journal.progress)
        assert second.engine is not None
        await second.deliver_final(OWNER, FINAL, again, ends_turn=False)
        await again.confirmed.wait()
        assert second.relay is not None
        await second.relay.catch_up(OWNER)  # the store's events, as a tab opening now
    assert finals(second) == ["<p>The answer.</p>\n"]


async def test_a_late_final_from_a_stalled_replica_is_refused_by_the_store(
    db: PgDatabase,
) -> None:
    """The first replica stalls (SIGSTOP) with its final queued, unwritten; the second
    takes the row over and writes the final; the first wakes and writes its queued copy:
    the store keeps one (a unique key per conversation and final key)."""
    stalled, _ = replica(db)
    second, _ = replica(db)
    assert stalled.relay is not None
    assert second.relay is not None
    journal = Journal()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            stalled.engine = page_engine(stalled, group)  # its relay's writer stands still
            second.engine = page_engine(second, group)
            group.start_soon(second.relay.run)
            await stalled.deliver_final(OWNER, FINAL, journal, ends_turn=False)
            while "key" not in journal.progress:
                await anyio.sleep(0.02)
            again = Journal(journal.progress)
            await second.deliver_final(OWNER, FINAL, again, ends_turn=False)
            await again.confirmed.wait()
            group.start_soon(stalled.relay.run)  # it wakes, its queue still holding the final
            await journal.confirmed.wait()
            group.cancel_scope.cancel()
    opened, relay = replica(db)
    await relay.catch_up(OWNER)  # a tab opening now, on a third replica
    assert finals(opened) == ["<p>The answer.</p>\n"]
