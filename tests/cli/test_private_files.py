"""The state folder is 0700 and every file the bot writes in it 0600, whatever the umask."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.channels.cli_process import PtySession, run_piped
from thalos_bot.cli.main import main
from thalos_bot.storage.database import Database

SCRIPTED = 'state_dir = "state"\n[provider]\nkind = "scripted"\n'


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common default umask: without explicit modes, files come out 0644."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.slow
@pytest.mark.usefixtures("open_umask")
def test_chat_creates_a_private_state_folder(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(SCRIPTED)
    result = run_piped(["chat"], "hello\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    state = tmp_path / "state"
    assert mode(state) == 0o700
    assert mode(state / "thalos.db") == 0o600
    assert mode(state / "chat.log") == 0o600


@pytest.mark.slow
@pytest.mark.usefixtures("open_umask")
def test_chat_offline_makes_the_state_folder_private_too(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text('state_dir = "state"\n')
    result = run_piped(["chat", "--offline"], "hello\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert mode(tmp_path / "state") == 0o700, "not only its offline/ folder"
    assert mode(tmp_path / "state" / "offline") == 0o700
    doctor = run_piped(["doctor", "--offline"], "", cwd=tmp_path)
    assert "is 0755" not in doctor.stdout


@pytest.mark.anyio
@pytest.mark.usefixtures("open_umask")
async def test_the_database_and_its_wal_files_are_private(tmp_path: Path) -> None:
    path = tmp_path / "state" / "thalos.db"
    async with await Database.open(path):
        sidecars = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
        assert all(p.exists() for p in sidecars), "WAL mode keeps both files while open"
        assert [mode(p) for p in (path, *sidecars)] == [0o600, 0o600, 0o600]
    assert mode(path.parent) == 0o700


@pytest.mark.slow
@pytest.mark.usefixtures("open_umask")
def test_console_history_is_private(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(SCRIPTED)
    session = PtySession(["chat"], cwd=tmp_path)
    try:
        session.read_until(lambda out: "Ctrl-D quits" in out and "›" in out, timeout=60)
        session.send("my secret line\r")
        said = "You said: my secret line"
        session.read_until(lambda out: said in out and "›" in out.split(said)[-1])
        session.send_eof()
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise
    history = tmp_path / "state" / "console_history"
    assert "my secret line" in history.read_text()
    assert mode(history) == 0o600


def test_doctor_warns_about_a_readable_state_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bot.toml"
    config.write_text(SCRIPTED)
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    with sqlite3.connect(state / "thalos.db") as db:  # a database, not an empty file
        db.execute("CREATE TABLE t (x)")
    (state / "thalos.db").chmod(0o644)
    assert main(["doctor", "--offline", "-c", str(config)]) == 0, "a warning is not a failure"
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if line.startswith("! state files private")]
    assert warnings == [
        f"! state files private: {state} is 0755 (expected 0700)",
        f"! state files private: {state / 'thalos.db'} is 0644 (expected 0600)",
    ]
    assert out.count("    fix: `thalos-bot doctor --fix` sets the mode") == 2
    # The third warning: the console is enabled and pytest's stdin is no terminal.
    assert "All checks passed (3 warnings)." in out
    state.chmod(0o700)
    (state / "thalos.db").chmod(0o600)
    assert main(["doctor", "--offline", "-c", str(config)]) == 0
    assert "state files private" not in capsys.readouterr().out
