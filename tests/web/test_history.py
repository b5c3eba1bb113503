"""The web conversation's kept history, in the daemon's SQLite file: what a page opened
after a restart is shown, and what it is not (an answer cut off half-written, a
question nobody can answer any more)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.web.test_engine_finals import CHAT, daemon
from thalos_bot.channels.ports import TextUpdate, TurnStarted
from thalos_bot.domain.events import TokenUsage, ToolCallStarted, ToolImage, TurnCompleted
from thalos_bot.domain.ids import SessionId
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.web_events import SqlitePageEvents
from thalos_bot_web.adapter import WebAdapter
from thalos_bot_web.upgrade import Imports

pytestmark = pytest.mark.anyio
SESSION = SessionId("s")
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


async def answer(page: WebAdapter, n: int) -> None:
    page.said(CHAT, f"q{n}", [])
    await page.deliver(CHAT, TurnStarted())
    tool = ToolCallStarted(SESSION, "c1", "fs__read", "{}")
    await page.deliver(CHAT, TextUpdate("a", (tool,)))
    await page.deliver(CHAT, TurnCompleted(SESSION, f"a{n}", TokenUsage(), (), 0.1))


async def reopened(folder: Path) -> list[tuple[str, str]]:
    """What a page opened on the restarted daemon shows: (kind, text) of each event."""
    async with daemon(folder) as page:
        await page.relay.catch_up(CHAT)
        events = page.timeline(CHAT).events()
    return [(e.kind, e.data.get("html") or e.data.get("text") or "") for e in events]


async def test_a_restart_shows_the_finished_turns_not_a_half_written_one(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(10):
        async with daemon(tmp_path) as page:
            await answer(page, 1)
            await page.deliver(CHAT, ToolImage(SESSION, "chart", "image/png", PNG))
            await page.deliver(CHAT, TurnStarted())  # killed while this one is written
            await page.deliver(CHAT, TextUpdate("half"))
            await page.relay.written()
            await page.relay.store.append(CHAT, "approval", {"id": "q"}, None, 50)
            (image,) = [e for e in page.timeline(CHAT).events() if e.kind == "image"]
        shown = await reopened(tmp_path)
        async with daemon(tmp_path) as again:
            key = str(image.data["url"]).removeprefix("/media/")
            served = await again.relay.store.media(CHAT, key)
    assert [kind for kind, _ in shown] == ["user", "turn", "activity", "final", "image"]
    assert shown[3] == ("final", "<p>a1</p>\n")
    assert served == ("image/png", PNG), "a tool's image is kept too"


async def test_ids_go_on_across_a_restart_so_a_tab_resumes_where_it_was(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        async with daemon(tmp_path) as page:
            await answer(page, 1)
            await page.relay.written()
            seen = page.timeline(CHAT).events()[-1].id
        async with daemon(tmp_path) as page:
            await answer(page, 2)
            await page.relay.written()
            reset, rest = page.timeline(CHAT).since(seen)
    assert not reset, "the id names the same event after the restart"
    assert [e.kind for e in rest] == ["user", "turn", "activity", "final"]
    assert rest[-1].data["html"] == "<p>a2</p>\n"


async def test_what_is_kept_stays_bounded_and_keeps_the_latest(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with daemon(tmp_path) as page:
            for n in range(30):
                await answer(page, n)
            await page.relay.written()
        shown = await reopened(tmp_path)
    assert len(shown) <= 50
    assert shown[-1] == ("final", "<p>a29</p>\n")


async def test_an_answer_being_written_is_one_row_in_the_store(tmp_path: Path) -> None:
    """Each flush replaces the partial before it (a page opening mid-answer gets the
    answer so far once), and the final replaces the last one."""
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        store = SqlitePageEvents(db)
        await store.append(CHAT, "turn", {"turn": "t"}, None, 50)
        for text in ("He", "Hell", "Hello"):
            await store.append(CHAT, "partial", {"turn": "t", "html": text}, "t", 50)
        writing = [(e.kind, e.data.get("html")) for e in await store.after({CHAT: 0})]
        await store.append(CHAT, "final", {"turn": "t", "html": "Hello!"}, "t", 50)
        done = [(e.seq, e.kind) for e in await store.after({CHAT: 0})]
    assert writing == [("turn", None), ("partial", "Hello")]
    assert done == [(1, "turn"), (5, "final")], "numbers go on past the rows replaced"


def old_file(folder: Path) -> Path:
    """The history an older version kept of the chat, as it wrote it."""
    lines = [
        {"kind": "user", "data": {"html": "<p>old q</p>", "files": []}, "turn": None},
        {"kind": "turn", "data": {"turn": "t0"}, "turn": None},
        {"kind": "image", "data": {"url": "/media/gone", "caption": "c"}, "turn": None},
        {"kind": "final", "data": {"turn": "t0", "html": "<p>old a</p>"}, "turn": "t0"},
    ]
    digest = hashlib.sha256(CHAT.encode()).hexdigest()[:24]
    path = folder / "web" / f"{digest}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n")
    return path


async def test_an_older_versions_file_is_imported_once_before_anything_new(
    tmp_path: Path,
) -> None:
    """An upgrade loses no page's history: the file goes into the store the first time
    the chat is written (here an answer comes before any page opens), ahead of it."""
    path = old_file(tmp_path)
    with anyio.fail_after(10):
        async with daemon(tmp_path) as page:
            page.relay.imports = Imports(tmp_path / "web")
            await answer(page, 1)
            await page.relay.written()
        async with daemon(tmp_path) as page:
            page.relay.imports = Imports(tmp_path / "web")  # renamed: not again
            await page.relay.catch_up(CHAT)
            shown = [(e.kind, e.data.get("html", "")) for e in page.timeline(CHAT).events()]
    assert shown[:3] == [("user", "<p>old q</p>"), ("turn", ""), ("final", "<p>old a</p>")]
    assert [kind for kind, _ in shown[3:]] == ["user", "turn", "activity", "final"]
    assert not path.exists()
    assert path.with_suffix(".imported").exists()


async def test_an_older_versions_file_is_shown_when_the_page_opens(tmp_path: Path) -> None:
    old_file(tmp_path)
    with anyio.fail_after(10):
        async with daemon(tmp_path) as page:
            page.relay.imports = Imports(tmp_path / "web")
            await page.relay.catch_up(CHAT)
            kinds = [e.kind for e in page.timeline(CHAT).events()]
    assert kinds == ["user", "turn", "final"]


class FailingOnce(SqlitePageEvents):
    """The store refusing its second append once (a disk full for a moment)."""

    appends = 0

    async def append(self, *args: Any, **kwargs: Any) -> int:
        FailingOnce.appends += 1
        if FailingOnce.appends == 2:
            raise OSError("disk full")
        return await super().append(*args, **kwargs)


async def test_an_import_the_store_refused_midway_goes_on_without_a_repeat(
    tmp_path: Path,
) -> None:
    old_file(tmp_path)
    with anyio.fail_after(10):
        async with daemon(tmp_path, FailingOnce) as page:
            page.relay.imports = Imports(tmp_path / "web")
            await answer(page, 1)  # written after the import, which the relay retries
            await page.relay.written()
            kinds = [e.kind for e in page.timeline(CHAT).events()]
    assert kinds == ["user", "turn", "final", "user", "turn", "activity", "final"]
