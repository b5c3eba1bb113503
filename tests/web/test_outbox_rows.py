"""The page's outbox rows through the daemon's outbox: an answer kept as a row is a
final bubble (markdown), a notice kept as a row (a detached failure) a warning notice in
plain text, as it was before finals went through the delivery engine; a kept voice clip
shown once across a daemon killed while delivering it; a row marked delivered is in the
page's history a kill leaves."""

from __future__ import annotations

import shutil
import threading
from datetime import datetime
from pathlib import Path
from typing import NoReturn

import anyio
import pytest

from tests.web.test_engine_finals import CHAT, daemon
from thalos_bot.channels import notices
from thalos_bot.domain.events import VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.service.clip_files import ClipFiles, clip_key
from thalos_bot.service.outbox import Outbox
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.outbox import OutboxState, Progress, SqliteOutbox
from thalos_bot.storage.protocol import OutboxKind
from thalos_bot_web.history import History
from thalos_bot_web.timeline import Event

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


class Held(History):
    """A page's history whose writes (in the writer's worker thread) wait until someone
    waits for them (:meth:`History.kept`) or :attr:`release` is set."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.release = threading.Event()

    def _write(self, conversation: ConversationId, events: list[Event]) -> None:
        self.release.wait(10)  # a bound: a test that fails still ends
        super()._write(conversation, events)

    async def kept(self, conversation: ConversationId) -> None:
        self.release.set()
        await super().kept(conversation)


class KilledAtFinish(Dying):
    """The rows of a daemon killed -9 as it marks a row delivered: the page's history
    files as the kill leaves them on disk are copied to ``aside``, then the held write
    goes on (too late), and the call never returns."""

    def __init__(self, db: Database, held: Held, aside: Path) -> None:
        super().__init__(db, "finish")
        self._held = held
        self.aside = aside

    async def finish(self, row_id: str, state: OutboxState, at: datetime) -> None:
        self.aside.mkdir()
        for path in self._held.folder.glob("*.jsonl"):
            shutil.copy(path, self.aside)
        self._held.release.set()
        await super().finish(row_id, state, at)


@pytest.mark.parametrize(
    ("kind", "shown"), [("answer", "final"), ("notice", "notice"), ("voice", "audio")]
)
async def test_a_row_marked_delivered_is_in_the_history_a_kill_leaves(
    tmp_path: Path, kind: OutboxKind, shown: str
) -> None:
    """The page's history is written in a worker thread, off the answer's path; a row's
    final, notice or clip is in the file before the row is marked delivered, so a page
    reloaded after a kill -9 right then still shows it."""
    held = Held(tmp_path / "web")
    clip = VoiceClip(SessionId("s"), "audio/ogg", b"OggS-1", 1.5, 1, 1, (), "out-1")
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        killed = KilledAtFinish(db, held, tmp_path / "aside")
        try:
            with anyio.fail_after(10):
                async with daemon(tmp_path / "web", held) as page:
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
        finally:
            held.release.set()
    assert [k.kind for k in History(killed.aside).load(CHAT)] == [shown]
