"""Reading a large skills library tells how it goes: ``skills check``/``list``/``sync``
show plain progress lines when piped (none with ``--quiet``, none for a small library),
and the daemon's start-up sync logs ``skills_sync_progress`` events."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.skills.conftest import open_db, write_skill
from thalos_bot.config.skills import SkillsSettings
from thalos_bot.skills.discovery import scan_roots
from thalos_bot.skills.sync import PROGRESS_FROM, sync_skills

LARGE = 150
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def large_library(folder: Path, count: int = LARGE) -> None:
    for n in range(count):
        write_skill(folder / "skills", f"skill-{n:03d}", description=f"Skill number {n}.")


def thalos(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THALOS_BOT")}
    return subprocess.run(
        [sys.executable, "-m", "thalos_bot.cli.main", "skills", *args, "-c", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_scanning_reports_each_entry_after_listing_every_root(tmp_path: Path) -> None:
    large_library(tmp_path, 4)
    heard: list[tuple[int, int]] = []
    roots = [tmp_path / "skills", tmp_path / "missing"]
    scan = scan_roots(roots, None, lambda done, total: heard.append((done, total)))
    assert len(scan.skills) == 4
    assert heard == [(n, 4) for n in range(5)]


@pytest.mark.anyio
async def test_the_start_up_sync_logs_its_progress_for_a_large_library(tmp_path: Path) -> None:
    large_library(tmp_path)
    async with await open_db(tmp_path / "thalos.db") as db:
        with capture_logs() as logs:
            report = await sync_skills(db, SkillsSettings(), tmp_path)
    assert len(report.added) == LARGE
    events = [(e["done"], e["total"]) for e in logs if e["event"] == "skills_sync_progress"]
    assert events == [(n, LARGE) for n in range(15, LARGE + 1, 15)]


@pytest.mark.anyio
async def test_a_small_library_logs_no_progress(tmp_path: Path) -> None:
    large_library(tmp_path, PROGRESS_FROM - 1)
    async with await open_db(tmp_path / "thalos.db") as db:
        with capture_logs() as logs:
            await sync_skills(db, SkillsSettings(), tmp_path)
    assert not [e for e in logs if e["event"] == "skills_sync_progress"]


@pytest.mark.slow
def test_the_commands_show_plain_lines_when_piped(tmp_path: Path) -> None:
    large_library(tmp_path)
    config = tmp_path / "bot.toml"
    config.write_text('state_dir = "state"\n')

    synced = thalos(config, "sync")
    assert synced.returncode == 0, synced.stderr
    assert synced.stdout == (
        f"synced {LARGE} skills ({LARGE} added, 0 updated, 0 unchanged, 0 deactivated)\n"
    )
    lines = synced.stderr.splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        f"skills sync: {n}/{LARGE}" for n in range(15, LARGE + 1, 15)
    ]
    assert not CONTROL.search(synced.stderr)

    checked = thalos(config, "check")
    assert checked.returncode == 0, checked.stderr
    assert checked.stderr.splitlines()[-1].startswith(f"skills scan: {LARGE}/{LARGE} (100%)")
    assert checked.stdout.startswith(f"skills ({LARGE}):")

    listed = thalos(config, "list", "--quiet")
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr == ""
    assert "skill-149  active" in listed.stdout

    again = thalos(config, "sync", "-q")
    assert again.stdout == (
        f"synced {LARGE} skills (0 added, 0 updated, {LARGE} unchanged, 0 deactivated)\n"
    )
    assert again.stderr == ""


@pytest.mark.slow
def test_a_small_library_shows_no_progress(tmp_path: Path) -> None:
    large_library(tmp_path, 3)
    config = tmp_path / "bot.toml"
    config.write_text('state_dir = "state"\n')
    checked = thalos(config, "check")
    assert checked.returncode == 0
    assert checked.stderr == ""
