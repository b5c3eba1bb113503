"""Pruning the media store: what no live session references goes after the retention,
what an open session (or one closed within the retention) shows stays."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from tests.fakes.anthropic_api import text_reply
from tests.media.host import USER, jpeg, running_daemon
from tests.storage.conftest import migrated_schema, migrated_template, migrated_url, postgres_server
from thalos_bot.cli.main import main
from thalos_bot.config.loader import ConfigError, load_settings
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.messages import DocumentBlock, ImageBlock, Message, TextBlock
from thalos_bot.media.prune import MediaPruner, Pruner
from thalos_bot.media.sqlite_store import SqliteMediaStore
from thalos_bot.media.store import MediaStore
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.media import PgMediaStore
from thalos_bot.storage.pg.media_prune import PgMediaPruner
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.storage.protocol import SessionRecord, SessionStore
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore

pytestmark = pytest.mark.anyio
__all__ = ["migrated_schema", "migrated_template", "migrated_url", "postgres_server"]  # fixtures

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY = 86400.0
RETENTION = 30 * DAY


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "state.db", migrations=ALL_MIGRATIONS)
    try:
        yield database
    finally:
        await database.aclose()


@dataclass(frozen=True, slots=True)
class Engine:
    """One database's media store, session store and the database the pruner prunes."""

    pruner: Callable[[float, Clock], Pruner]
    media: Callable[[Clock], MediaStore]
    sessions: SessionStore


@pytest.fixture(params=["sqlite", "postgres"])
async def engine(request: pytest.FixtureRequest, db: Database) -> AsyncIterator[Engine]:
    if request.param == "sqlite":
        yield Engine(
            lambda retention, clock: MediaPruner(db, retention, clock),
            lambda clock: SqliteMediaStore(db, clock),
            SqliteSessionStore(db),
        )
        return
    async with await PgDatabase.open(request.getfixturevalue("migrated_url")) as pg:
        yield Engine(
            lambda retention, clock: PgMediaPruner(pg, retention, clock),
            lambda clock: PgMediaStore(pg, clock),
            PgSessionStore(pg),
        )


async def _session(
    sessions: SessionStore, name: str, blocks: tuple[ImageBlock | DocumentBlock, ...]
) -> SessionId:
    session = SessionId(name)
    await sessions.create(SessionRecord(session, AgentId("assistant"), "owner", "open", T0, T0))
    turn = [Message("user", (*blocks, TextBlock("look"))), Message("assistant", (TextBlock("ok"),))]
    await sessions.commit_turn(session, turn, TokenUsage(), T0)
    return session


async def test_only_what_no_live_session_needs_goes_after_the_retention(engine: Engine) -> None:
    clock = Clock(T0)
    store = engine.media(clock)
    sessions = engine.sessions
    live = await store.put(b"live-photo", "image/jpeg", kind="image", origin="t:1")
    ended = await store.put(b"%PDF-ended", "application/pdf", kind="pdf", origin="t:2")
    text = await store.put(b"a text file", "text/plain", kind="text", origin="t:3")
    recent = await store.put(b"closed-lately", "image/png", kind="image", origin="t:4")
    await _session(sessions, "s-open", (ImageBlock(live, "image/jpeg", 10),))
    old = await _session(sessions, "s-old", (DocumentBlock(ended, "application/pdf", 10),))
    lately = await _session(sessions, "s-lately", (ImageBlock(recent, "image/png", 13),))
    await sessions.close(old, T0 + timedelta(days=1))
    await sessions.close(lately, T0 + timedelta(days=25))
    clock.at = T0 + timedelta(days=40)
    fresh = await store.put(b"sent today", "image/jpeg", kind="image")
    pruner = engine.pruner(RETENTION, clock)

    listed = await pruner.prune(dry_run=True)
    assert sorted(item.hash for item in listed.removed) == sorted([ended, text])
    assert listed.bytes_freed == len(b"%PDF-ended") + len(b"a text file")
    assert len(await store.get_many([live, ended, text, recent, fresh])) == 5, "a dry run"

    with capture_logs() as logs:
        report = await pruner.prune()
    assert {item.hash: item.kind for item in report.removed} == {ended: "pdf", text: "text"}
    assert set(await store.get_many([live, ended, text, recent, fresh])) == {live, recent, fresh}
    assert await store.find("t:2") is None, "its origin keys go with it"
    assert await store.find("t:1") is not None
    assert [e for e in logs if e["event"] == "media_pruned"] == [
        {
            "event": "media_pruned",
            "log_level": "info",
            "rows": 2,
            "bytes": report.bytes_freed,
            "retention_s": RETENTION,
        }
    ]
    assert (await pruner.prune()).removed == (), "nothing twice"


async def test_bytes_sent_again_count_from_then(engine: Engine) -> None:
    clock = Clock(T0)
    store = engine.media(clock)
    digest = await store.put(b"the same photo", "image/jpeg", kind="image")
    clock.at = T0 + timedelta(days=40)
    await store.put(b"the same photo", "image/jpeg", kind="image")  # a turn storing it now
    assert (await engine.pruner(RETENTION, clock).prune()).removed == ()
    clock.at = T0 + timedelta(days=71)
    assert [item.hash for item in (await engine.pruner(RETENTION, clock).prune()).removed] == [
        digest
    ]


async def test_the_background_prune_runs_its_rounds(db: Database) -> None:
    clock = Clock(T0)
    store = SqliteMediaStore(db, clock)
    digest = await store.put(b"old", "image/jpeg", kind="image")
    clock.at = T0 + timedelta(days=31)
    with capture_logs() as logs:
        await MediaPruner(db, RETENTION, clock).run(first_after=0, every=0, rounds=2)
    assert await store.get_many([digest]) == {}
    assert [e["event"] for e in logs] == ["media_pruned"], "the second round found nothing"


def _config(tmp_path: Path, media: str) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(f'state_dir = "state"\n[media]\n{media}\n', encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ('"30 days"', "is not a duration"),
        ('"10m"', "must be at least 1h"),
        ("-1", "must not be negative"),
        ('"400d"', "must be at most"),
    ],
)
def test_a_bad_retention_is_a_config_error_naming_the_file_and_key(
    tmp_path: Path, value: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as error:
        load_settings(_config(tmp_path, f"retention = {value}"))
    [message] = error.value.problems
    assert message.startswith(f"{tmp_path / 'bot.toml'}: media.retention: "), message
    assert problem in message


def test_retention_defaults_to_30_days_and_can_be_off(tmp_path: Path) -> None:
    assert load_settings(_config(tmp_path, "")).settings.media.retention == 30 * DAY
    assert load_settings(_config(tmp_path, 'retention = "off"')).settings.media.retention is None


def test_media_prune_lists_removes_and_counts_the_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, 'retention = "7d"')
    database = load_settings(config).database_path
    database.parent.mkdir(parents=True, exist_ok=True)

    async def fill() -> tuple[str, str]:
        async with await Database.open(database, migrations=ALL_MIGRATIONS) as db:
            store = SqliteMediaStore(db, Clock(datetime.now(UTC) - timedelta(days=8)))
            old = await store.put(b"x" * 1500, "image/jpeg", kind="image", origin="t:9")
            return old, await SqliteMediaStore(db).put(b"new", "image/png", kind="image")

    async def stored(hashes: list[str]) -> set[str]:
        async with await Database.open(database, migrations=ALL_MIGRATIONS) as db:
            return set(await SqliteMediaStore(db).get_many(hashes))

    digest, kept = anyio.run(fill)
    capsys.readouterr()  # the migrations' log lines
    assert main(["media", "prune", "--dry-run", "--config", str(config)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"would remove {digest[:16]} image/jpeg (image), 1.5 kB, last sent ")
    assert out[-1].startswith("would remove 1 item, would free 1.5 kB (1,500 bytes); kept: ")
    assert anyio.run(stored, [digest, kept]) == {digest, kept}
    capsys.readouterr()

    assert main(["media", "prune", "--config", str(config)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"removed {digest[:16]} image/jpeg")
    assert out[-1].startswith("removed 1 item, freed 1.5 kB (1,500 bytes)")
    assert anyio.run(stored, [digest, kept]) == {kept}
    capsys.readouterr()

    assert main(["media", "prune", "--config", str(config)]) == 0
    assert capsys.readouterr().out.startswith("nothing to prune: every stored item is newer")


def test_media_prune_with_retention_off_prunes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, 'retention = "off"')
    assert main(["media", "prune", "--config", str(config)]) == 0
    assert 'media.retention is "off"' in capsys.readouterr().out


async def test_a_live_sessions_image_still_answers_after_a_prune(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    later = Clock(datetime.now(UTC) + timedelta(days=60))  # past every retention
    keep = "[provider.compaction]\nkeep_media_turns = 5"  # the photo is sent on every turn
    async with running_daemon(tmp_path, monkeypatch, extra=keep) as bot:
        bot.anthropic.enqueue(text_reply("A red square."), text_reply("Noted."))
        bot.telegram.push_photo(USER, USER, jpeg(320, 240))
        await bot.shown(lambda t: "A red square." in t)
        bot.telegram.push_document(
            USER, USER, b"some notes\n", file_name="notes.txt", mime_type="text/plain"
        )
        await bot.shown(lambda t: "Noted." in t)
        [photo] = [h for h, size in bot.media_rows() if size > 100]
        async with await Database.open(bot.database, migrations=ALL_MIGRATIONS) as db:
            pruned = await MediaPruner(db, RETENTION, later).prune()
        assert [item.kind for item in pruned.removed] == ["text"], "only the file's copy"
        assert [h for h, _ in bot.media_rows()] == [photo]

        bot.anthropic.enqueue(text_reply("Still red."))
        bot.telegram.push_text(USER, USER, "what colour was it?")
        await bot.shown(lambda t: "Still red." in t)
        history = bot.anthropic.requests[-1].body["messages"]
        first = bot.anthropic.requests[0].body["messages"][-1]["content"][0]
        images = [b for m in history for b in m["content"] if b["type"] == "image"]
        assert [b["source"]["data"] for b in images] == [first["source"]["data"]]

        bot.telegram.push_text(USER, USER, "/new")
        await bot.shown(lambda t: len(t) >= 4)
        async with await Database.open(bot.database, migrations=ALL_MIGRATIONS) as db:
            gone = await MediaPruner(db, RETENTION, later).prune()
    assert [item.hash for item in gone.removed] == [photo], "once its session has ended"
