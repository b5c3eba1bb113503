"""``thalos-bot schedules list|cancel``, run as a process against the daemon's database."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from tests.channels.cli_process import run_piped
from tests.schedules.conftest import open_db
from thalos_bot.config.loader import load_settings
from thalos_bot.domain.address import Address
from thalos_bot.domain.security import SecurityContext
from thalos_bot.schedules.store import NewSchedule, ScheduleStore

pytestmark = pytest.mark.slow


async def seed(path: Path) -> str:
    db = await open_db(path)
    try:
        store = ScheduleStore(db)
        made = await store.create(
            NewSchedule(
                SecurityContext.of("alice"),
                "assistant",
                "Water the plants.",
                Address.parse("telegram:42"),
                cron="0 9 * * 1",
                timezone="Europe/Berlin",
            ),
            datetime.now(UTC),
        )
        return made.id
    finally:
        await db.aclose()


def test_list_and_cancel(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text('state_dir = "state"\n', encoding="utf-8")
    empty = run_piped(["schedules", "list"], "", cwd=tmp_path)
    assert empty.returncode == 0, empty.stderr
    assert "no database" in empty.stderr
    schedule_id = anyio.run(seed, load_settings(tmp_path / "bot.toml").database_path)
    listed = run_piped(["schedules", "list"], "", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    [line] = listed.stdout.splitlines()
    assert line.startswith(f"{schedule_id}: cron '0 9 * * 1' (Europe/Berlin), next ")
    assert "Water the plants." in line
    assert "owner alice" in line
    assert "to telegram:42" in line
    assert run_piped(["schedules", "list", "--owner", "bob"], "", cwd=tmp_path).stdout == (
        "no pending schedules\n"
    )
    cancelled = run_piped(["schedules", "cancel", schedule_id], "", cwd=tmp_path)
    assert cancelled.returncode == 0, cancelled.stderr
    again = run_piped(["schedules", "cancel", schedule_id], "", cwd=tmp_path)
    assert again.returncode == 1
    assert "no pending schedule" in again.stderr
    assert run_piped(["schedules", "list"], "", cwd=tmp_path).stdout == "no pending schedules\n"


def test_list_says_which_schedules_are_skipped_because_their_chat_is_no_longer_allowed(
    tmp_path: Path,
) -> None:
    (tmp_path / "bot.toml").write_text(
        'state_dir = "state"\n[channels.telegram]\nallowed_user_ids = [7]\n', encoding="utf-8"
    )
    path = load_settings(tmp_path / "bot.toml").database_path
    gone = anyio.run(seed, path)  # to telegram:42, allowed when it was made
    listed = run_piped(["schedules", "list"], "", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    [line] = listed.stdout.splitlines()
    assert line.startswith(f"{gone}: ")
    skipped = " skipped: chat no longer allowed (user 42 is not in allowed_user_ids)"
    assert line.endswith(skipped), line


JOB = (
    '[[schedules]]\nid = "morning"\ntask = "Say good morning."\ncron = "0 8 * * *"\n'
    'deliver_to = "telegram:42"\nprincipal = "alice"\n'
)


def test_a_job_in_bot_toml_not_yet_synced_is_listed_as_added_at_next_start(
    tmp_path: Path,
) -> None:
    (tmp_path / "bot.toml").write_text('state_dir = "state"\n' + JOB, encoding="utf-8")
    before_any_start = run_piped(["schedules", "list"], "", cwd=tmp_path)
    assert before_any_start.returncode == 0, before_any_start.stderr
    assert before_any_start.stdout == (
        "morning: cron '0 8 * * *' (UTC) — Say good morning. "
        "[to telegram:42, from bot.toml, added at next start]\n"
    )
    anyio.run(seed, load_settings(tmp_path / "bot.toml").database_path)
    with_a_database = run_piped(["schedules", "list"], "", cwd=tmp_path).stdout
    assert "Water the plants." in with_a_database
    assert "morning: cron '0 8 * * *' (UTC)" in with_a_database
    assert "added at next start" in with_a_database


async def _pause(path: Path, schedule_id: str) -> None:
    db = await open_db(path)
    try:
        assert await ScheduleStore(db).pause(schedule_id)
    finally:
        await db.aclose()


def test_a_paused_schedule_is_listed_as_paused_and_can_be_cancelled(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text('state_dir = "state"\n', encoding="utf-8")
    path = load_settings(tmp_path / "bot.toml").database_path
    schedule_id = anyio.run(seed, path)
    anyio.run(_pause, path, schedule_id)
    [line] = run_piped(["schedules", "list"], "", cwd=tmp_path).stdout.splitlines()
    assert line.startswith(f"{schedule_id}: ")
    assert line.endswith(" paused: it runs again once resumed on the dashboard")
    cancelled = run_piped(["schedules", "cancel", schedule_id], "", cwd=tmp_path)
    assert cancelled.returncode == 0, cancelled.stderr
    assert run_piped(["schedules", "list"], "", cwd=tmp_path).stdout == "no pending schedules\n"
