"""Start-up sync: one way, files first; what is added, skipped, updated, deactivated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.skills.conftest import accept, write_skill
from thalos_bot.config.skills import SkillsSettings
from thalos_bot.skills.store import SkillStore, StoredSkill
from thalos_bot.skills.sync import SkillSyncError, sync_skills
from thalos_bot.storage.database import Database
from thalos_bot.storage.migrations import MIGRATIONS

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(hours=1)


def settings(*roots: str, **extra: object) -> SkillsSettings:
    return SkillsSettings.model_validate({"roots": list(roots) or ["skills"], **extra})


async def rows(store: SkillStore) -> dict[str, StoredSkill]:
    return {row.name: row for row in await store.stored()}


async def test_first_sync_adds_every_skill(db: Database, store: SkillStore, tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "release", description="Cut a release.")
    write_skill(tmp_path / "skills", "triage", form="file")
    report = await sync_skills(db, settings(), tmp_path, now=T0)
    assert report.added == ("release", "triage")
    assert report.active == ("release", "triage")
    assert report.roots == ((tmp_path / "skills").resolve(),)
    stored = await rows(store)
    assert stored["release"].active
    assert stored["release"].description == "Cut a release."
    assert stored["release"].source == (tmp_path / "skills" / "release" / "SKILL.md").resolve()
    assert await store.body("release") == "# Steps\n\n1. Do it.\n"


async def test_an_unchanged_file_is_skipped(
    db: Database, store: SkillStore, tmp_path: Path
) -> None:
    write_skill(tmp_path / "skills", "release")
    write_skill(tmp_path / "skills", "triage")
    await sync_skills(db, settings(), tmp_path, now=T0)
    write_skill(tmp_path / "skills", "triage", description="Sort incoming issues.")
    await accept(db, tmp_path / "skills", "triage")  # a change loads once reviewed
    report = await sync_skills(db, settings(), tmp_path, now=T1)
    assert report.unchanged == ("release",)
    assert report.updated == ("triage",)
    stored = await rows(store)
    assert stored["release"].updated_at == T0  # not rewritten
    assert stored["triage"].updated_at == T1
    assert stored["triage"].description == "Sort incoming issues."


async def test_a_disappeared_file_is_deactivated(
    db: Database, store: SkillStore, tmp_path: Path
) -> None:
    keep = write_skill(tmp_path / "skills", "release")
    gone = write_skill(tmp_path / "skills", "triage", form="file")
    await sync_skills(db, settings(), tmp_path, now=T0)
    gone.unlink()
    report = await sync_skills(db, settings(), tmp_path, now=T1)
    assert report.deactivated == ("triage",)
    stored = await rows(store)
    assert not stored["triage"].active
    assert stored["release"].active
    assert await store.body("triage") is None
    assert [s.name for s in await store.active_summaries()] == ["release"]
    # It comes back, unchanged, when its file does.
    gone.write_text(keep.read_text().replace("release", "triage"))
    report = await sync_skills(db, settings(), tmp_path, now=T1)
    assert report.updated == ("triage",)
    assert (await rows(store))["triage"].active


async def test_an_unreadable_root_deactivates_nothing(
    db: Database, store: SkillStore, tmp_path: Path
) -> None:
    write_skill(tmp_path / "skills", "release")
    write_skill(tmp_path / "team", "triage")
    await sync_skills(db, settings("skills", "team"), tmp_path, now=T0)
    # A typo in one root's path, and a file really deleted from the other.
    (tmp_path / "skills" / "release" / "SKILL.md").unlink()
    with capture_logs() as logs:
        report = await sync_skills(db, settings("skills", "tema"), tmp_path, now=T1)
    assert report.deactivated == ()
    assert [(p.root.name, p.reason) for p in report.unreadable_roots] == [
        ("tema", "does not exist")
    ]
    assert all(row.active for row in (await rows(store)).values())
    events = [entry["event"] for entry in logs]
    assert "skills-root-unreadable" in events
    assert "skills-deactivation-skipped" in events


async def test_a_duplicate_across_roots_first_root_wins_and_the_loser_is_logged(
    db: Database, store: SkillStore, tmp_path: Path
) -> None:
    write_skill(tmp_path / "main", "release", description="The main one.")
    loser = write_skill(tmp_path / "extra", "release", form="file", description="The other.")
    with capture_logs() as logs:
        report = await sync_skills(db, settings("main", "extra"), tmp_path, now=T0)
    assert report.added == ("release",)
    assert (await rows(store))["release"].description == "The main one."
    duplicate = [entry for entry in logs if entry["event"] == "skill-duplicate"]
    assert duplicate == [
        {
            "event": "skill-duplicate",
            "log_level": "warning",
            "skill": "release",
            "kept": str((tmp_path / "main" / "release" / "SKILL.md").resolve()),
            "ignored": str(loser.resolve()),
        }
    ]


async def test_a_malformed_file_is_logged_and_skipped(
    db: Database, store: SkillStore, tmp_path: Path
) -> None:
    path = write_skill(tmp_path / "skills", "release", description="Version one.")
    write_skill(tmp_path / "skills", "triage")
    await sync_skills(db, settings(), tmp_path, now=T0)
    path.write_text("---\nname: release\ndescription: Version two.\n")  # unterminated
    write_skill(tmp_path / "skills", "broken-new", "no fence\n")
    with capture_logs() as logs:
        report = await sync_skills(db, settings(), tmp_path, now=T1)
    assert sorted(e.path.parent.name for e in report.errors) == ["broken-new", "release"]
    errors = [entry for entry in logs if entry["event"] == "skill-load-error"]
    assert {e["path"] for e in errors} == {str(e.path) for e in report.errors}
    assert all(e["log_level"] == "warning" for e in errors)
    # Skipped: the last good version stays as it was, nothing else is disturbed.
    stored = await rows(store)
    assert stored["release"].active
    assert stored["release"].description == "Version one."
    assert stored["release"].updated_at == T0
    assert "broken-new" not in stored
    assert report.unchanged == ("triage",)
    assert report.deactivated == ()


async def test_a_moved_skill_follows_its_file(
    db: Database, store: SkillStore, tmp_path: Path
) -> None:
    old = write_skill(tmp_path / "skills", "release")
    await sync_skills(db, settings(), tmp_path, now=T0)
    new = write_skill(tmp_path / "skills", "release", old.read_text(), form="file")
    old.unlink()
    old.parent.rmdir()
    await accept(db, tmp_path / "skills", "release")
    report = await sync_skills(db, settings(), tmp_path, now=T1)
    assert report.updated == ("release",)
    assert (await rows(store))["release"].source == new.resolve()


async def test_an_absolute_root_is_used_as_given(db: Database, tmp_path: Path) -> None:
    write_skill(tmp_path / "abs", "release")
    report = await sync_skills(db, settings(str(tmp_path / "abs")), Path("/nonexistent"))
    assert report.added == ("release",)


async def test_a_store_failure_fails_the_sync_loudly(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "release")
    db = await Database.open(tmp_path / "no-skills-tables.db", migrations=MIGRATIONS)
    try:
        with capture_logs() as logs, pytest.raises(SkillSyncError):
            await sync_skills(db, settings(), tmp_path)
    finally:
        await db.aclose()
    assert [e["log_level"] for e in logs if e["event"] == "skills-sync-failed"] == ["error"]


async def test_a_closed_database_fails_the_sync(db: Database, tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "release")
    await db.aclose()
    with capture_logs(), pytest.raises(SkillSyncError):
        await sync_skills(db, settings(), tmp_path)


async def test_a_skill_synced_before_folders_were_recorded_gets_its_folder(
    db: Database, store: SkillStore, tmp_path: Path
) -> None:
    write_skill(tmp_path / "skills", "release")
    write_skill(tmp_path / "skills", "triage", form="file")
    await sync_skills(db, settings(), tmp_path, now=T0)
    async with db.transaction() as conn:  # as a row written before migration 0202 reads
        await conn.execute("UPDATE skills SET folder = NULL")
    report = await sync_skills(db, settings(), tmp_path, now=T1)
    assert report.updated == ("release",)
    assert report.unchanged == ("triage",)
    stored = await rows(store)
    assert stored["release"].folder == (tmp_path / "skills" / "release").resolve()
    assert stored["triage"].folder is None


async def test_every_problem_of_a_broken_file_is_logged(db: Database, tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "release", "---\nname: Release_\ndescription: ''\n---\n")
    with capture_logs() as logs:
        report = await sync_skills(db, settings(), tmp_path, now=T0)
    path = str(tmp_path / "skills" / "release" / "SKILL.md")
    assert report.added == ()
    assert [(e["key"], e["reason"]) for e in logs if e["event"] == "skill-load-error"] == [
        ("name", "'Release_' must be lower-case"),
        ("name", "'Release_' may hold only letters, digits and '-' (not '_')"),
        ("name", "'Release_' disagrees with its folder name 'release'"),
        ("description", "must not be empty"),
    ]
    assert {e["path"] for e in logs if e["event"] == "skill-load-error"} == {path}
