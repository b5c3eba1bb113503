"""``thalos-bot web pair`` run by root for the service: the code goes into the service's
database, and every file there stays the daemon's user's (a root-owned file there made
every login fail until someone removed it)."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

import anyio
import pytest

from tests.channels.cli_process import clean_env, run_piped
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot_web import cli

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
    """The service's state folder, 0700 and its user's, as systemd makes it, with the
    database its daemon made."""
    state = tmp_path / "var-lib-thalos-bot"
    state.mkdir(mode=0o700)
    anyio.run(_made, state / "thalos.db")
    for path in [state, *state.iterdir()]:
        os.chown(path, SERVICE_UID, SERVICE_UID)
    (tmp_path / "bot.toml").write_text(CONFIG, encoding="utf-8")
    return state


async def _made(path: Path) -> None:
    async with await Database.open(path, migrations=ALL_MIGRATIONS):
        pass


def _pair(tmp_path: Path, state: Path) -> None:
    env = clean_env({"THALOS_BOT_STATE_DIR": str(state)})
    result = run_piped(["web", "pair", "--config", str(tmp_path / "bot.toml")], "", tmp_path, env)
    assert result.returncode == 0, result.stderr


def test_a_code_paired_by_root_is_the_services_to_read(tmp_path: Path) -> None:
    state = _service_state(tmp_path)
    _pair(tmp_path, state)
    for path in state.iterdir():  # the database and any file SQLite made beside it
        info = path.stat()
        assert (info.st_uid, info.st_gid) == (SERVICE_UID, SERVICE_UID), path.name
        assert stat.S_IMODE(info.st_mode) == 0o600, path.name


def test_root_pairing_beside_the_services_folder_is_told_where_it_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bot.toml from an install before it named the service's folder: root's command
    looks in root's own folder, which the service never reads (no database there); the
    command says so."""
    service = _service_state(tmp_path)
    monkeypatch.setattr(cli, "SERVICE_STATE", service)
    monkeypatch.setenv("THALOS_BOT_STATE_DIR", str(tmp_path / "roots-own"))
    args = argparse.Namespace(config=tmp_path / "bot.toml", principal=None)
    assert cli._run_pair(args) == 1
    told = capsys.readouterr().err
    assert f"a system service reads {service}" in told
    assert f'state_dir = "{service}"' in told
    assert "start the daemon once" in told
    monkeypatch.setenv("THALOS_BOT_STATE_DIR", str(service))
    assert cli._run_pair(args) == 0
    assert capsys.readouterr().err == "", "nothing to say when it is the service's folder"
