"""Paths that used to end in a Python traceback (or a log line in the output) now end in
one line that says what is wrong, and configuration or state-folder problems exit 2 (the
unit's ``RestartPreventExitStatus``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.channels.cli_process import clean_env, command, run_piped

pytestmark = pytest.mark.slow

SCRIPTED = '[provider]\nkind = "scripted"\n'


def _one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.strip()]
    assert len(errors) == 1, stderr
    return errors[0]


def test_chat_with_a_state_folder_it_cannot_write_exits_2(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where a folder should be\n")
    (tmp_path / "bot.toml").write_text('state_dir = "blocker/state"\n' + SCRIPTED)
    result = run_piped(["chat"], "hello\n", cwd=tmp_path)
    assert result.returncode == 2
    line = _one_error_line(result.stderr)
    assert line.startswith(f"error: state folder {tmp_path / 'blocker' / 'state'}: cannot write")
    assert "doctor --fix" in line


def test_a_database_that_cannot_open_exits_2(tmp_path: Path) -> None:
    (tmp_path / "state" / "thalos.db").mkdir(parents=True)
    (tmp_path / "bot.toml").write_text('state_dir = "state"\n' + SCRIPTED)
    result = run_piped(["chat"], "hello\n", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert _one_error_line(result.stderr).startswith("error: database ")


def test_check_into_a_closed_pipe_stops_quietly(tmp_path: Path) -> None:
    # `check | head -3` with head gone before check writes: the write gets EPIPE.
    (tmp_path / "bot.toml").write_text(SCRIPTED)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [*command(), "check"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=clean_env(),
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in result.stderr
    assert "BrokenPipeError" not in result.stderr
    assert result.stderr == ""
    assert result.returncode == 141


def test_run_with_only_the_console_and_no_terminal_refuses(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text('state_dir = "state"\n' + SCRIPTED)
    result = run_piped(["run"], "", cwd=tmp_path)
    assert result.returncode == 2
    line = _one_error_line(result.stderr)
    assert "the console is the only channel enabled, and stdin is not a terminal" in line


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_pair_with_telegram_unreachable_says_why_without_log_lines(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    (tmp_path / "bot.toml").write_text(
        f'state_dir = "state"\n{SCRIPTED}[channels.telegram]\nbase_url = "{url}"\n'
        "request_timeout = 2\n"
    )
    result = run_piped(
        ["telegram", "pair", "--yes"],
        "",
        cwd=tmp_path,
        env={"TELEGRAM_BOT_TOKEN": "123456:" + "A" * 35},
        timeout=60,
    )
    assert result.returncode == 1
    output = result.stdout + result.stderr
    assert "{" not in output, f"a JSON log line in the output:\n{output}"
    assert "Traceback" not in output
    assert f"Telegram cannot be reached at {url}: the connection was refused" in output


def test_pair_refuses_a_token_of_the_wrong_shape_without_calling_telegram(
    tmp_path: Path,
) -> None:
    # Nothing listens at base_url: a network call would say "cannot be reached" instead.
    url = f"http://127.0.0.1:{_closed_port()}"
    (tmp_path / "bot.toml").write_text(
        f'state_dir = "state"\n{SCRIPTED}[channels.telegram]\nbase_url = "{url}"\n'
    )
    result = run_piped(
        ["telegram", "pair", "--yes"],
        "",
        cwd=tmp_path,
        env={"TELEGRAM_BOT_TOKEN": "my-bot-password"},
        timeout=60,
    )
    assert result.returncode == 2
    output = result.stdout + result.stderr
    assert "TELEGRAM_BOT_TOKEN does not look like a bot token" in output
    assert "cannot be reached" not in output
    assert "my-bot-password" not in output


@pytest.fixture
def foreign_state() -> Iterator[Path]:
    """A setup whose state folder this user cannot enter (the "forgot sudo" case: the
    service's own, 0700): a folder of root's, as another user, when the tests run as
    root; otherwise the folder's own mode taken away."""
    top = Path(tempfile.mkdtemp(prefix="thalos-foreign-", dir="/tmp"))
    top.chmod(0o755)
    (top / "bot.toml").write_text('state_dir = "state"\n' + SCRIPTED)
    (top / "bot.toml").chmod(0o644)
    assert run_piped(["chat"], "hello\n", cwd=top).returncode == 0
    (top / "state").chmod(0o700 if os.geteuid() == 0 else 0)
    try:
        yield top
    finally:
        (top / "state").chmod(0o700)
        shutil.rmtree(top)


@pytest.mark.parametrize(
    "words",
    [
        ["status"],
        ["doctor", "--offline"],
        ["memory", "list"],
        ["schedules", "list"],
        ["media", "prune"],
        ["audit"],
        ["skills", "list"],
        ["logs"],
    ],
)
def test_a_state_folder_this_user_cannot_enter_is_one_line(
    foreign_state: Path, words: list[str]
) -> None:
    as_other = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    result = subprocess.run(
        [*(as_other if os.geteuid() == 0 else []), *command(), *words],
        capture_output=True,
        text=True,
        cwd=foreign_state,
        env=clean_env(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    line = _one_error_line(result.stderr)
    assert "permission denied for" in line, line
    assert str(foreign_state / "state") in line


def test_init_into_a_file_or_a_folder_it_cannot_write_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("in the way\n")
    for where in ("afile", "afile/sub"):
        result = run_piped(["init", where, "--model", "claude-sonnet-5-5"], "", cwd=tmp_path)
        assert result.returncode == 1
        assert _one_error_line(result.stderr) == (
            "error: afile is a file, not a folder; name the folder bot.toml goes in "
            "(`thalos-bot init FOLDER`, or `init` in that folder)"
        )
