"""The outbox across a crash: the real daemon, killed with SIGKILL while its final
answer's sendMessage is in flight (or just after it arrived), restarted on the same
state directory, shows the answer in the Telegram fake exactly once."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.channels.cli_process import clean_env, command
from tests.daemon_config import telegram_daemon_config
from tests.fakes.telegram_api import RecordedCall, TelegramFake
from tests.telegram.harness import STRANGER, USER
from thalos_bot_telegram import TOKEN_ENV

pytestmark = pytest.mark.slow

QUESTION = "remember the milk"
ANSWER = f"You said: {QUESTION}"


def _write_config(tmp_path: Path, fake: TelegramFake) -> None:
    (tmp_path / "bot.toml").write_text(
        telegram_daemon_config(
            fake.base_url,
            USER,
            telegram='request_timeout = 1\nbackoff_initial = "0.1s"\n'
            'chat_min_interval = "0.05s"\nconflict_backoff = "50ms"',
        ),
        encoding="utf-8",
    )


def _start(tmp_path: Path, fake: TelegramFake) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [*command(), "run"],
        cwd=tmp_path,
        env=clean_env({TOKEN_ENV: fake.token}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        fake.wait_for_blocking(lambda: fake.polling, timeout=30)
    except BaseException:
        process.kill()
        process.communicate(timeout=20)
        raise
    return process


def _kill(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=20)
    assert process.returncode == -signal.SIGKILL


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    return stderr


def _rows(tmp_path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(tmp_path / "state" / "thalos.db") as db:
        return db.execute("SELECT kind, text, state FROM outbox ORDER BY created_at").fetchall()


def _final_sends(fake: TelegramFake) -> list[RecordedCall]:
    return [c for c in fake.calls("sendMessage") if c.params.get("text") == ANSWER]


def _probes(fake: TelegramFake) -> list[RecordedCall]:
    return [c for c in fake.calls("editMessageText") if c.params.get("text") == ANSWER]


@contextmanager
def _database_locked(tmp_path: Path) -> Iterator[None]:
    """Hold the database's write lock: the daemon can read, but marks nothing."""
    db = sqlite3.connect(tmp_path / "state" / "thalos.db", isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        yield
        db.execute("ROLLBACK")
    finally:
        db.close()


def _recover(tmp_path: Path, fake: TelegramFake) -> str:
    """Restart on the same state directory; return the second run's log once the
    answer shows and the daemon stopped cleanly."""
    process = _start(tmp_path, fake)
    try:
        # Re-checked on every call the daemon makes (it long-polls once a second).
        fake.wait_for_blocking(lambda: _rows(tmp_path)[0][2] == "delivered", timeout=30)
    finally:
        stderr = _stop(process)
    return stderr


@pytest.mark.parametrize("applied", [False, True], ids=["hung-not-applied", "applied-then-died"])
def test_killed_while_the_final_send_hangs(
    tmp_path: Path, fake: TelegramFake, applied: bool
) -> None:
    _write_config(tmp_path, fake)
    if applied:
        fake.timeout_next("sendMessage")  # processed, then never answered
    else:
        fake.stall_next("sendMessage")  # held before it is processed
    process = _start(tmp_path, fake)
    try:
        fake.push_text(USER, USER, QUESTION)
        fake.wait_for_blocking(lambda: _final_sends(fake), timeout=30)
    finally:
        _kill(process)
    assert fake.texts(USER) == ([ANSWER] if applied else [])
    assert _rows(tmp_path) == [("answer", ANSWER, "pending")]

    log = _recover(tmp_path, fake)

    assert fake.texts(USER) == [ANSWER]
    assert _rows(tmp_path) == [("answer", ANSWER, "delivered")]
    assert "outbox_redelivering" in log
    # It was checked before anything was sent again, and sent again only if missing.
    (probe,) = _probes(fake)
    sends = _final_sends(fake)
    if applied:
        assert len(sends) == 1
    else:
        assert len(sends) == 2
        assert probe.at < sends[1].at


def test_killed_while_the_final_send_hangs_as_another_chat_writes(
    tmp_path: Path, fake: TelegramFake
) -> None:
    # Another chat's message takes the id just below the answer's (one counter for the
    # bot account): after the restart, its "not found" must not pass for the answer's.
    _write_config(tmp_path, fake)
    fake.timeout_next("sendMessage", others_say={STRANGER: "anyone there?"})
    process = _start(tmp_path, fake)
    try:
        fake.push_text(USER, USER, QUESTION)
        fake.wait_for_blocking(lambda: _final_sends(fake), timeout=30)
    finally:
        _kill(process)
    assert fake.texts(USER) == [ANSWER]

    _recover(tmp_path, fake)

    assert fake.texts(USER) == [ANSWER], "shown exactly once"
    assert len(_final_sends(fake)) == 1
    assert _rows(tmp_path) == [("answer", ANSWER, "delivered")]
    (found,) = [p for p in _probes(fake) if p.status == 400 and "not modified" in str(p.response)]
    assert found.params["message_id"] == fake.messages(USER)[0].message_id


def test_killed_after_the_send_arrived_but_before_it_was_marked(
    tmp_path: Path, fake: TelegramFake
) -> None:
    _write_config(tmp_path, fake)
    fake.timeout_next("sendMessage")
    process = _start(tmp_path, fake)
    try:
        fake.push_text(USER, USER, QUESTION)
        fake.wait_for_blocking(lambda: _final_sends(fake), timeout=30)
        with _database_locked(tmp_path):
            # The send timed out; the daemon's own check finds the message there...
            fake.wait_for_blocking(lambda: any(c.status == 400 for c in _probes(fake)), timeout=30)
            # ... but cannot mark the row delivered before it dies.
            _kill(process)
    finally:
        if process.returncode is None:
            _kill(process)
    assert fake.texts(USER) == [ANSWER]
    assert _rows(tmp_path) == [("answer", ANSWER, "pending")]

    _recover(tmp_path, fake)

    assert fake.texts(USER) == [ANSWER]
    assert len(_final_sends(fake)) == 1
    assert _rows(tmp_path) == [("answer", ANSWER, "delivered")]
