"""``thalos-bot web pair`` run by root for the service: the code goes where the daemon
reads it, in a file the daemon's user owns (a root-owned file there made every login
fail until someone removed it)."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

import pytest

from tests.channels.cli_process import clean_env, run_piped
from thalos_bot_web import cli
from thalos_bot_web.pairing import FILE_NAME

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user"),
]

SERVICE_UID = 65534
"""The daemon's user (``DynamicUser=`` picks one; nobody here)."""
CONFIG = """
[channels.console]
enabled = false
[channels.web]
enabled = true
principals = ["owner"]
"""


def _service_state(tmp_path: Path) -> Path:
    """The service's state folder, 0700 and its user's, as systemd makes it."""
    state = tmp_path / "var-lib-thalos-bot"
    state.mkdir(mode=0o700)
    os.chown(state, SERVICE_UID, SERVICE_UID)
    (tmp_path / "bot.toml").write_text(CONFIG, encoding="utf-8")
    return state


def _pair(tmp_path: Path, state: Path) -> None:
    env = clean_env({"THALOS_BOT_STATE_DIR": str(state)})
    result = run_piped(["web", "pair", "--config", str(tmp_path / "bot.toml")], "", tmp_path, env)
    assert result.returncode == 0, result.stderr


def test_a_code_paired_by_root_is_the_services_to_read(tmp_path: Path) -> None:
    state = _service_state(tmp_path)
    _pair(tmp_path, state)
    info = (state / FILE_NAME).stat()
    assert (info.st_uid, info.st_gid) == (SERVICE_UID, SERVICE_UID)
    assert stat.S_IMODE(info.st_mode) == 0o600


def test_a_root_owned_code_file_left_behind_is_given_back(tmp_path: Path) -> None:
    state = _service_state(tmp_path)
    left = state / FILE_NAME  # as an earlier version left it, made by root
    left.write_text("[]", encoding="utf-8")
    left.chmod(0o600)
    assert left.stat().st_uid == 0
    _pair(tmp_path, state)
    assert (state / FILE_NAME).stat().st_uid == SERVICE_UID


def test_a_symlink_planted_in_the_services_folder_is_not_written_through(
    tmp_path: Path,
) -> None:
    """The service's user owns the folder; root's `web pair` must not write (or give
    away) a file of root's choosing that a link there points at."""
    state = _service_state(tmp_path)
    precious = tmp_path / "precious"
    precious.write_text("root's own", encoding="utf-8")
    (state / FILE_NAME).symlink_to(precious)
    env = clean_env({"THALOS_BOT_STATE_DIR": str(state)})
    result = run_piped(["web", "pair", "--config", str(tmp_path / "bot.toml")], "", tmp_path, env)
    assert result.returncode == 1
    assert "cannot write the login code" in result.stderr
    assert "Traceback" not in result.stderr
    assert precious.read_text(encoding="utf-8") == "root's own"
    assert precious.stat().st_uid == 0


def test_root_pairing_beside_the_services_folder_is_told_where_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bot.toml from an install before it named the service's folder: root's code goes
    to root's own folder, which the service never reads; the command says so."""
    service = _service_state(tmp_path)
    monkeypatch.setattr(cli, "SERVICE_STATE", service)
    monkeypatch.setenv("THALOS_BOT_STATE_DIR", str(tmp_path / "roots-own"))
    args = argparse.Namespace(config=tmp_path / "bot.toml", principal=None)
    assert cli._run_pair(args) == 0
    told = capsys.readouterr().err
    assert f"a system service reads {service}" in told
    assert f'state_dir = "{service}"' in told
    monkeypatch.setenv("THALOS_BOT_STATE_DIR", str(service))
    assert cli._run_pair(args) == 0
    assert capsys.readouterr().err == "", "nothing to say when it is the service's folder"
