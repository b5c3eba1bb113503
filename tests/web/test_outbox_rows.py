"""The page's outbox rows through the daemon's outbox: an answer kept as a row is a
final bubble (markdown), a notice kept as a row (a detached failure) a warning notice in
plain text, as it was before finals went through the delivery engine; a kept voice clip
shown once across a daemon killed while delivering it; a row marked delivered is in the
page's store a kill leaves."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import anyio
import pytest

from tests.web.test_engine_finals import CHAT, daemon
from thalos_bot.channels import notices
from thalos_bot.domain.events import VoiceClip
from thalos_bot.domain.ids import ChannelId, SessionId
from thalos_bot.service.clip_files import ClipFiles, clip_key
from thalos_bot.service.outbox import Outbox
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.outbox import OutboxState, Progress, SqliteOutbox
from thalos_bot.storage.protocol import OutboxKind
from thalos_bot.storage.web_events import SqlitePageEvents

pytestmark = pytest.mark.anyio
WEB = ChannelId("web")


async def test_a_notice_row_is_a_warning_notice_and_an_answer_row_a_final(
    tmp_path: Path,
) -> None:
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        with anyio.fail_after(10):
            async with daemon(tmp_path / "web") as page:
                outbox = Outbox(SqliteOutbox(db), {WEB: page}, keep=86400)
                async with outbox.running() as running:
                    await running.deliver(WEB, CHAT, "Your **reminder**.", kind="answer")
                    await running.deliver(WEB, CHAT, "The *9:00* job failed.", kind="notice")
                    while len(page.timeline(CHAT).events()) < 2:
                        await anyio.sleep(0.01)
                events = page.timeline(CHAT).events()
        async with db.read() as conn:
            cursor = await conn.execute("SELECT state FROM outbox")
            states = [row[0] for row in await cursor.fetchall()]
    assert [(e.kind, e.data["html"]) for e in events] == [
        ("final", "<p>Your <strong>reminder</strong>.</p>\n"),
        ("notice", "The *9:00* job failed."),
    ]
    assert events[1].data["tone"] == "warning"
    assert states == ["delivered", "delivered"]


class Dying(SqliteOutbox):
    """The rows of a daemon killed at its first ``save_progress`` or ``finish``: that
    call never returns (what it was given is not written)."""

    def __init__(self, db: Database, at: str) -> None:
        super().__init__(db)
        self._at = at
        self.died = anyio.Event()

    async def save_progress(self, row_id: str, progress: Progress, at: datetime) -> None:
        if self._at == "save_progress":
            await self._die()
        await super().save_progress(row_id, progress, at)

    async def finish(self, row_id: str, state: OutboxState, at: datetime) -> None:
        if self._at == "finish":
            await self._die()
        await super().finish(row_id, state, at)

    async def _die(self) -> NoReturn:
        self.died.set()
        await anyio.sleep_forever()
        raise AssertionError  # never woken


@pytest.mark.parametrize(
    "dies_at",
    ["save_progress", "finish"],
    ids=["killed before the upload", "killed once it was on the page"],
)
async def test_a_kept_clip_killed_mid_delivery_is_on_the_page_once_after_the_restart(
    tmp_path: Path, dies_at: str
) -> None:
    """A spoken answer's clip kept as a row goes through the engine's upload, its key
    noted in the row first: a daemon killed before the row is marked delivered, whether
    the clip reached the page or not, is followed by one that uploads it again under
    that key, and the page (its history read back) shows it once."""
    clip = VoiceClip(SessionId("s"), "audio/ogg", b"OggS-1", 1.5, 1, 1, (), "out-1")
    files = ClipFiles(tmp_path / "voice-clips")
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        with anyio.fail_after(10):
            dying = Dying(db, dies_at)
            async with daemon(tmp_path / "web") as first, anyio.create_task_group() as killed:
                outbox = Outbox(dying, {WEB: first}, keep=86400, clips=files)
                async with outbox.running():
                    killed.start_soon(outbox.keep_clip, WEB, CHAT, clip, first)
                    await dying.died.wait()
                    killed.cancel_scope.cancel()
            async with daemon(tmp_path / "web") as second:
                outbox = Outbox(SqliteOutbox(db), {WEB: second}, keep=86400, clips=files)
                async with outbox.running():  # takes the row up again at start-up
                    while await _state(db, clip_key("out-1", clip)) == "pending":
                        await anyio.sleep(0.01)
                clips = [e for e in second.timeline(CHAT).events() if e.kind == "audio"]
    assert len(clips) == 1
    assert clips[0].data["caption"] == notices.voice_clip(1, 1)


async def _state(db: Database, row: str) -> str:
    async with db.read() as conn:
        cursor = await conn.execute("SELECT state FROM outbox WHERE id = ?", (row,))
        found = await cursor.fetchone()
    assert found is not None
    return str(found[0])


class Held(SqlitePageEvents):
    """The page's store, whose writes wait (at most a second) until :attr:`release` is
    set: a row confirmed before its event is written would be marked delivered first."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.release = anyio.Event()

    async def append(
        self, conversation: str, kind: str, data: Mapping[str, Any], turn: str | None, keep: int
    ) -> int:
        with anyio.move_on_after(1.0):
            await self.release.wait()
        return await super().append(conversation, kind, data, turn, keep)


class KilledAtFinish(Dying):
    """The rows of a daemon killed -9 as it marks a row delivered: what the page's store
    holds then is noted in :attr:`held_then`, the held writes go on (too late), and the call
    never returns."""

    def __init__(self, db: Database) -> None:
        super().__init__(db, "finish")
        self.pages: list[Held] = []
        self.held_then: list[str] | None = None

    async def finish(self, row_id: str, state: OutboxState, at: datetime) -> None:
        (held,) = self.pages
        self.held_then = [e.kind for e in await held.after({CHAT: 0})]
        held.release.set()
        await super().finish(row_id, state, at)


def held(into: list[Held]) -> Callable[[Database], Held]:
    def made(db: Database) -> Held:
        into.append(Held(db))
        return into[-1]

    return made


@pytest.mark.parametrize(
    ("kind", "shown"), [("answer", "final"), ("notice", "notice"), ("voice", "audio")]
)
async def test_a_row_marked_delivered_is_in_the_store_a_kill_leaves(
    tmp_path: Path, kind: OutboxKind, shown: str
) -> None:
    """The page's events are written to the daemon's database by the relay, off the
    answer's path; a row's final, notice or clip is written before the row is marked
    delivered, so a page reloaded after a kill -9 right then still shows it."""
    clip = VoiceClip(SessionId("s"), "audio/ogg", b"OggS-1", 1.5, 1, 1, (), "out-1")
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        killed = KilledAtFinish(db)
        with anyio.fail_after(10):
            async with daemon(tmp_path / "web", held(killed.pages)) as page:
                files = ClipFiles(tmp_path / "voice-clips")
                outbox = Outbox(killed, {WEB: page}, keep=86400, clips=files)
                with anyio.CancelScope() as kill:
                    async with outbox.running() as running, anyio.create_task_group() as tg:
                        if kind == "voice":
                            tg.start_soon(outbox.keep_clip, WEB, CHAT, clip, page)
                        else:
                            await running.deliver(WEB, CHAT, "The answer.", kind=kind)
                        await killed.died.wait()
                        kill.cancel()
    assert killed.held_then == [shown]
