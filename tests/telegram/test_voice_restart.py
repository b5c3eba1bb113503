"""A spoken answer across a crash: the real daemon (speaking with the local engine),
killed with SIGKILL while the Telegram fake holds its ``sendVoice`` (the upload arrived,
or not yet), restarted on the same state directory: the user sees the answer's text and
exactly one voice message, and the clip's file is gone once it is delivered."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.daemon_config import telegram_daemon_config
from tests.fakes.telegram_api import RecordedCall, TelegramFake
from tests.telegram.harness import USER
from tests.telegram.test_outbox_restart import _kill, _start, _stop
from thalos_bot.channels import notices

pytestmark = pytest.mark.slow

QUESTION = "remember the milk"
ANSWER = f"You said: {QUESTION}"
CAPTION = notices.voice_clip(1, 1)


def _write_config(tmp_path: Path, fake: TelegramFake) -> None:
    (tmp_path / "bot.toml").write_text(
        telegram_daemon_config(
            fake.base_url,
            USER,
            sections='[speech]\nenabled = true\nmode = "on"',
            telegram='request_timeout = 5\nbackoff_initial = "0.1s"\n'
            'chat_min_interval = "0.05s"\nconflict_backoff = "50ms"',
        ),
        encoding="utf-8",
    )


def _rows(tmp_path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(tmp_path / "state" / "thalos.db") as db:
        return db.execute("SELECT kind, state FROM outbox ORDER BY created_at, kind").fetchall()


def _clip_files(tmp_path: Path) -> list[str]:
    folder = tmp_path / "state" / "voice-clips"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _until(done: Callable[[], bool], timeout: float = 60) -> None:
    """Poll the database: the fake's own wait would look again only when the fake hears
    from the daemon (its next long poll, a second or more later)."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"not done within {timeout} s"
        time.sleep(0.05)


def _shown(fake: TelegramFake) -> list[tuple[str, str]]:
    return [(m.kind, m.text) for m in fake.messages(USER)]


def _uploads(fake: TelegramFake) -> list[RecordedCall]:
    return fake.calls("sendVoice")


@pytest.mark.parametrize("arrived", [False, True], ids=["held-not-arrived", "arrived-then-died"])
def test_killed_while_the_voice_upload_is_held(
    tmp_path: Path, fake: TelegramFake, arrived: bool
) -> None:
    _write_config(tmp_path, fake)
    if arrived:
        fake.timeout_next("sendVoice")  # processed, then never answered
    else:
        fake.stall_next("sendVoice")  # held before it is processed
    process = _start(tmp_path, fake)
    try:
        fake.push_text(USER, USER, QUESTION)
        fake.wait_for_blocking(lambda: _uploads(fake), timeout=60)
    finally:
        _kill(process)
    assert _shown(fake) == [("text", ANSWER), *([("voice", CAPTION)] if arrived else [])]
    assert _rows(tmp_path) == [("answer", "delivered"), ("voice", "pending")]
    (kept,) = _clip_files(tmp_path)
    assert kept.endswith("-voice-1.ogg")

    process = _start(tmp_path, fake)
    try:
        _until(lambda: _rows(tmp_path)[-1][1] == "delivered")
    finally:
        log = _stop(process)

    assert _shown(fake) == [("text", ANSWER), ("voice", CAPTION)]
    assert _rows(tmp_path) == [("answer", "delivered"), ("voice", "delivered")]
    assert _clip_files(tmp_path) == []
    assert "outbox_redelivering" in log
    # Looked for (by its caption) before it was uploaded again, and uploaded again only
    # if it had not arrived.
    probes = [c for c in fake.calls("editMessageCaption") if c.params.get("caption") == CAPTION]
    uploads = _uploads(fake)
    assert probes
    if arrived:
        assert len(uploads) == 1
        assert "not modified" in str(probes[-1].response)
    else:
        assert len(uploads) == 2
        assert probes[0].at < uploads[1].at
        assert uploads[1].params["voice"]["content"] == uploads[0].params["voice"]["content"]
