"""``thalos-bot chat`` as a session: exit codes for scripts, ``--offline``, and the line
that says a restart continues the previous conversation."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.channels.cli_process import PtySession, run_piped
from thalos_bot.storage.database import encode_time

pytestmark = pytest.mark.slow

SCRIPTED = 'state_dir = "state"\n[provider]\nkind = "scripted"\n'
NO_KEY = 'state_dir = "state"\n'


def test_piped_chat_exits_one_when_a_turn_failed(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(NO_KEY)
    failed = run_piped(["chat"], "hello\n", cwd=tmp_path)
    assert failed.returncode == 1
    assert "ANTHROPIC_API_KEY" in failed.stdout
    commands_only = run_piped(["chat"], "/help\n/status\n", cwd=tmp_path)
    assert commands_only.returncode == 0, "no turn ran, so none failed"


def test_offline_uses_the_scripted_model_without_editing_the_config(tmp_path: Path) -> None:
    config = tmp_path / "bot.toml"
    config.write_text(NO_KEY)
    result = run_piped(["chat", "--offline"], "hello offline\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "You said: hello offline"
    assert config.read_text() == NO_KEY


def test_offline_keeps_a_session_of_its_own_and_shows_no_cost(tmp_path: Path) -> None:
    # A real-provider conversation first (the turn fails for want of a key, but the
    # terminal is bound to a session and its tokens would count today).
    (tmp_path / "bot.toml").write_text(NO_KEY)
    run_piped(["chat"], "hello\n", cwd=tmp_path)
    with sqlite3.connect(tmp_path / "state" / "thalos.db") as db:
        real = db.execute("SELECT session_id FROM conversation_bindings").fetchall()
    assert len(real) == 1
    result = run_piped(["chat", "--offline"], "echo me\n/status\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Turns: 1" in result.stdout, "the offline session is not the one held before"
    spent = [line for line in result.stdout.splitlines() if line.startswith("Spent")]
    assert len(spent) == 2, result.stdout
    assert all(line.endswith("tokens, $0.00") for line in spent), spent
    with sqlite3.connect(tmp_path / "state" / "thalos.db") as db:
        after = db.execute("SELECT session_id FROM conversation_bindings").fetchall()
        history = " ".join(row[0] for row in db.execute("SELECT content FROM session_messages"))
        spent = db.execute("SELECT COUNT(*) FROM usage_daily").fetchone()[0]
    assert after == real, "the real provider's conversation is left as it was"
    assert "echo me" not in history, "the echo turn went into the real session"
    assert spent == 0, "the echo turn counted in the real day's spending"


def _chat_once(tmp_path: Path, line: str) -> str:
    session = PtySession(["chat"], cwd=tmp_path)
    try:
        session.read_until(lambda out: "Ctrl-D quits" in out and "›" in out, timeout=60)
        session.send(line + "\r")
        said = f"You said: {line}"
        session.read_until(lambda out: said in out and "›" in out.split(said)[-1])
        session.send_eof()
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise
    return session.visible


def _last_active(tmp_path: Path, ago: timedelta) -> None:
    with sqlite3.connect(tmp_path / "state" / "thalos.db") as db:
        db.execute(
            "UPDATE conversation_bindings SET last_activity = ?",
            (encode_time(datetime.now(UTC) - ago),),
        )


def test_a_restart_says_it_continues_the_conversation(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(SCRIPTED + '[pump]\nidle_timeout = "3h"\n')
    first = _chat_once(tmp_path, "hello")
    assert "Continuing your conversation" not in first
    _last_active(tmp_path, timedelta(hours=2, minutes=5))
    second = _chat_once(tmp_path, "again")
    assert (
        "Continuing your conversation with Assistant from 2 hours ago; /new starts fresh." in second
    )
    _last_active(tmp_path, timedelta(hours=4))
    third = _chat_once(tmp_path, "later")
    assert "Continuing your conversation" not in third, "an idle session is not continued"
    assert "idle for" in third
