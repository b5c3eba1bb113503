"""A spoken answer's clips in the outbox: each a ``voice`` row (its audio a file in the
state folder), keyed by the turn and the part so writing it again adds nothing, handed
to a channel that confirms uploads with its journal (else delivered and marked), taken
up again at start-up with what the channel noted, its file removed once the row is done
or pruned."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.ports import Delivery, Notice
from thalos_bot.domain.events import VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.service.clip_files import ClipFiles
from thalos_bot.service.finals import FinalsThroughOutbox
from thalos_bot.service.outbox import Outbox
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.outbox import SqliteOutbox

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
CONSOLE, TG = ChannelId("console"), ChannelId("telegram")
CHAT = ConversationId("42")
TURN = "out-0123456789abcdef"


def clip(part: int = 1, parts: int = 2, turn: str | None = TURN) -> VoiceClip:
    return VoiceClip(
        SessionId("s1"), "audio/ogg", f"OggS-{part}".encode(), 2.25, part, parts, (1, 9, 255), turn
    )


@dataclass
class PlainAdapter:
    """Like the console: shows what it is given at once, confirms nothing."""

    channel_id: ChannelId = CONSOLE
    shown: list[Delivery] = field(default_factory=list)

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        self.shown.append(event)


@dataclass
class ClipChannel:
    """A channel that confirms uploads: keeps what it was handed, confirms when told."""

    channel_id: ChannelId = TG
    handed: list[tuple[VoiceClip, DeliveryJournal, Mapping[str, object]]] = field(
        default_factory=list
    )
    shown: list[Delivery] = field(default_factory=list)

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        self.shown.append(event)

    async def deliver_clip(
        self, conversation_id: ConversationId, clip: VoiceClip, journal: DeliveryJournal
    ) -> None:
        self.handed.append((clip, journal, dict(journal.progress)))


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as opened:
        yield opened


def _outbox(db: Database, files: ClipFiles, *adapters: PlainAdapter | ClipChannel) -> Outbox:
    return Outbox(
        SqliteOutbox(db),
        {a.channel_id: a for a in adapters},
        keep=3600,
        clock=lambda: NOW,
        clips=files,
    )


async def _rows(db: Database) -> list[tuple[str, str, str]]:
    async with db.read() as conn:
        cursor = await conn.execute("SELECT id, kind, state FROM outbox ORDER BY id")
        return [(r[0], r[1], r[2]) for r in await cursor.fetchall()]


async def test_a_clip_becomes_a_voice_row_with_its_audio_on_disk(
    db: Database, tmp_path: Path
) -> None:
    files = ClipFiles(tmp_path / "voice-clips")
    channel = ClipChannel()
    outbox = _outbox(db, files, channel)
    async with outbox.running():
        assert await outbox.keep_clip(TG, CHAT, clip(2), channel)
        assert await _rows(db) == [(f"{TURN}-voice-2", "voice", "pending")]
        assert (files.folder / f"{TURN}-voice-2.ogg").read_bytes() == b"OggS-2"
        row = await outbox.store.get(f"{TURN}-voice-2")
        assert row is not None
        described = json.loads(row.text)
        assert described == {
            "file": f"{TURN}-voice-2.ogg",
            "session": "s1",
            "media_type": "audio/ogg",
            "duration": 2.25,
            "part": 2,
            "parts": 2,
            "waveform": [1, 9, 255],
        }
        [(handed, journal, progress)] = channel.handed
        assert handed == clip(2)
        assert progress == {}
        await journal.save({"key": "k1"})
        await journal.confirm()
    assert await _rows(db) == [(f"{TURN}-voice-2", "voice", "delivered")]
    assert files.names() == {}  # the audio goes with the row


async def test_the_same_clip_kept_again_adds_nothing(db: Database, tmp_path: Path) -> None:
    files = ClipFiles(tmp_path / "voice-clips")
    channel = ClipChannel()
    outbox = _outbox(db, files, channel)
    async with outbox.running():
        await outbox.keep_clip(TG, CHAT, clip(1), channel)
        await outbox.keep_clip(TG, CHAT, clip(1), channel)  # while in hand
        assert len(channel.handed) == 1
        await channel.handed[0][1].confirm()
        await outbox.keep_clip(TG, CHAT, clip(1), channel)  # once delivered
    assert len(channel.handed) == 1
    assert await _rows(db) == [(f"{TURN}-voice-1", "voice", "delivered")]


async def test_a_clip_naming_no_turn_is_not_kept(db: Database, tmp_path: Path) -> None:
    files = ClipFiles(tmp_path / "voice-clips")
    channel = ClipChannel()
    outbox = _outbox(db, files, channel)
    async with outbox.running():
        assert not await outbox.keep_clip(TG, CHAT, clip(turn=None), channel)
    assert await _rows(db) == []


async def test_a_channel_that_cannot_confirm_gets_it_plainly_and_it_is_marked(
    db: Database, tmp_path: Path
) -> None:
    files = ClipFiles(tmp_path / "voice-clips")
    console = PlainAdapter()
    outbox = _outbox(db, files, console)
    async with outbox.running():
        await outbox.keep_clip(CONSOLE, CHAT, clip(1), console)
    assert console.shown == [clip(1)]
    assert await _rows(db) == [(f"{TURN}-voice-1", "voice", "delivered")]
    assert files.names() == {}


async def test_a_pending_clip_is_handed_again_at_start_up_with_its_journal(
    db: Database, tmp_path: Path
) -> None:
    files = ClipFiles(tmp_path / "voice-clips")
    first = ClipChannel()
    async with _outbox(db, files, first).running() as outbox:
        await outbox.keep_clip(TG, CHAT, clip(1), first)
        await first.handed[0][1].save({"key": "k1", "floor": 7})
    # the process died before the upload was confirmed
    second = ClipChannel()
    async with _outbox(db, files, second).running():
        [(handed, journal, progress)] = second.handed
        assert handed == clip(1, turn=None)  # read back from its row and its file
        assert progress == {"key": "k1", "floor": 7}
        await journal.confirm()
    assert await _rows(db) == [(f"{TURN}-voice-1", "voice", "delivered")]
    assert files.names() == {}


async def test_a_pending_clip_whose_file_is_gone_is_refused(db: Database, tmp_path: Path) -> None:
    files = ClipFiles(tmp_path / "voice-clips")
    first = ClipChannel()
    async with _outbox(db, files, first).running() as outbox:
        await outbox.keep_clip(TG, CHAT, clip(1), first)
    (files.folder / f"{TURN}-voice-1.ogg").unlink()
    second = ClipChannel()
    async with _outbox(db, files, second).running():
        pass
    assert second.handed == []
    assert await _rows(db) == [(f"{TURN}-voice-1", "voice", "failed")]


async def test_pruning_removes_the_files_of_rows_no_longer_pending(
    db: Database, tmp_path: Path
) -> None:
    files = ClipFiles(tmp_path / "voice-clips")
    channel = ClipChannel()
    async with _outbox(db, files, channel).running() as outbox:
        await outbox.keep_clip(TG, CHAT, clip(1), channel)
        await outbox.keep_clip(TG, CHAT, clip(2), channel)
    # a crash came between the row's end and its file's removal; and a stray file
    await outbox.store.finish(f"{TURN}-voice-1", "delivered", NOW)
    files.folder.joinpath("out-gone-voice-1.ogg").write_bytes(b"x")
    assert set(files.names()) == {f"{TURN}-voice-1", f"{TURN}-voice-2", "out-gone-voice-1"}
    await _outbox(db, files, channel).prune()
    assert set(files.names()) == {f"{TURN}-voice-2"}  # still pending: kept


async def test_the_pumps_clip_goes_through_the_outbox(db: Database, tmp_path: Path) -> None:
    files = ClipFiles(tmp_path / "voice-clips")
    channel = ClipChannel()
    async with _outbox(db, files, channel).running() as outbox:
        wrapped = FinalsThroughOutbox(channel, outbox)
        await wrapped.deliver(CHAT, clip(1))
        await wrapped.deliver(CHAT, clip(2, turn=None))  # no turn row: passed through
        await wrapped.deliver(CHAT, Notice("hi"))
    assert [c.part for c, _, _ in channel.handed] == [1]
    assert channel.shown == [clip(2, turn=None), Notice("hi")]
    assert await _rows(db) == [(f"{TURN}-voice-1", "voice", "pending")]
