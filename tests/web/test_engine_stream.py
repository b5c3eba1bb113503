"""An answer streams into the page through the kit's delivery engine: each flush is a
``partial`` of its turn, the end one ``final`` event (even when the last partial showed
the same text), a cut answer's final keeps its tone, and a turn with nothing to say
still ends on the page."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.web.test_engine_finals import CHAT, daemon
from thalos_bot.channels.ports import Delivery, TextUpdate, TurnStarted
from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import (
    TokenUsage,
    ToolCallStarted,
    TurnCompleted,
    TurnFailed,
)
from thalos_bot.domain.ids import SessionId
from thalos_bot.storage.database import Database
from thalos_bot.storage.web_events import PageEvent, SqlitePageEvents

pytestmark = pytest.mark.anyio
SESSION = SessionId("s")


def completed(text: str) -> TurnCompleted:
    return TurnCompleted(SESSION, text, TokenUsage(), (), 0.1)


class Seen(SqlitePageEvents):
    """The store, noting every event written (partials included), in order."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.seen: list[PageEvent] = []

    async def append(
        self, conversation: str, kind: str, data: Mapping[str, Any], turn: str | None, keep: int
    ) -> int:
        seq = await super().append(conversation, kind, data, turn, keep)
        self.seen.append(PageEvent(conversation, seq, kind, dict(data), turn))
        return seq


def noting(stores: list[Seen]) -> Callable[[Database], Seen]:
    """The page's store, made as a :class:`Seen` kept in ``stores``."""

    def made(db: Database) -> Seen:
        stores.append(Seen(db))
        return stores[-1]

    return made


async def streamed(folder: Path, *deliveries: Delivery) -> list[PageEvent]:
    """Every event the page got for ``deliveries`` (partials included), in order, each
    delivery written before the next."""
    stores: list[Seen] = []
    with anyio.fail_after(10):
        async with daemon(folder, noting(stores)) as page:
            for delivery in deliveries:
                await page.deliver(CHAT, delivery)
                await page.relay.written()  # flushes spaced as the pump spaces them
    return stores[0].seen


async def test_each_flush_is_a_partial_and_the_end_one_final(tmp_path: Path) -> None:
    tool = ToolCallStarted(SESSION, "c1", "memory__recall", "{}")
    seen = await streamed(
        tmp_path,
        TurnStarted(),
        TextUpdate("Hel", (tool,)),
        TextUpdate("lo"),
        completed("Hello"),
    )
    assert [e.kind for e in seen] == ["turn", "activity", "partial", "partial", "final"]
    turn = seen[0].data["turn"]
    assert all(e.data["turn"] == turn for e in seen), "one turn on the page"
    assert seen[1].data["text"] == "⚙ memory__recall …"
    assert [e.data["html"] for e in seen[2:]] == ["<p>Hel</p>\n"] + ["<p>Hello</p>\n"] * 2
    assert "failed" not in seen[-1].data
    assert seen[-1].data["at"], "the final carries its time"


async def test_a_cut_answer_ends_in_a_final_with_its_tone(tmp_path: Path) -> None:
    cut = TurnFailed(SESSION, AgentError(ErrorCode.CANCELLED), partial_text="Hel")
    failed = TurnFailed(SESSION, AgentError(ErrorCode.PROVIDER_ERROR), partial_text="")
    seen = await streamed(tmp_path, TurnStarted(), TextUpdate("Hel"), cut, TurnStarted(), failed)
    finals = [e for e in seen if e.kind == "final"]
    assert [e.data["failed"] for e in finals] == ["info", "error"]
    assert finals[0].data["html"].startswith("<p>Hel</p>")
    turns = [e.data["turn"] for e in seen if e.kind == "turn"]
    assert [e.turn for e in finals] == turns


async def test_a_turn_with_nothing_to_say_still_ends(tmp_path: Path) -> None:
    seen = await streamed(tmp_path, TurnStarted(), completed(""))
    assert [(e.kind, e.data.get("html")) for e in seen] == [("turn", None), ("final", "")]
    assert seen[1].turn == seen[0].data["turn"]


async def test_a_burst_of_flushes_is_written_once_and_the_page_ends_on_the_last(
    tmp_path: Path,
) -> None:
    """Flushes queued faster than the store writes replace one another in the relay's
    queue (only the one being written stays): the store is not written once per flush,
    and the page still shows the answer's last text, then its final."""
    stores: list[Seen] = []
    with anyio.fail_after(10):
        async with daemon(tmp_path, noting(stores)) as page:
            page.said(CHAT, "go", [])  # at the head of the queue: being written
            for n in range(1, 51):
                page.relay.publish(CHAT, "partial", {"turn": "t", "html": "x" * n}, "t")
            await page.relay.written()
            last = page.timeline(CHAT).events()[-1]
    partials = [e for e in stores[0].seen if e.kind == "partial"]
    assert len(partials) < 50
    assert (last.kind, last.data["html"]) == ("partial", "x" * 50)
