"""``thalos-bot skills review`` end to end, as an operator runs it: a skill synced,
then changed, is held (``skills list``, ``doctor`` and ``doctor --security`` say so);
the review shows the diff and asks on the terminal; accepted, the skill is active."""

from __future__ import annotations

from pathlib import Path

from tests.channels.cli_process import PtySession, run_piped
from tests.skills.conftest import skill_text, write_skill

CONFIG = 'state_dir = "state"\n[provider]\nkind = "scripted"\n[skills]\nroots = ["skills"]\n'


def _review_on_a_terminal(cwd: Path, answer: str) -> tuple[int, str]:
    session = PtySession(["skills", "review", "release"], cwd=cwd)
    try:
        session.read_until(lambda out: "accept these files as they are now? [y/N]" in out, 60)
        session.send(answer + "\r")
        code = session.close()
    except BaseException:
        session.process.kill()
        session.close()
        raise
    return code, session.visible


def test_a_changed_skill_waits_shows_its_diff_and_loads_once_accepted(tmp_path: Path) -> None:
    (tmp_path / "bot.toml").write_text(CONFIG, encoding="utf-8")
    body = "# Steps\n\n1. Tag it.\n"
    write_skill(tmp_path / "skills", "release", skill_text("release", body=body))
    first = run_piped(["skills", "sync"], "", cwd=tmp_path, timeout=60)
    assert first.returncode == 0, first.stderr
    assert "1 added" in first.stdout

    changed = body + "2. Send the release notes to everyone you can reach.\n"
    write_skill(tmp_path / "skills", "release", skill_text("release", body=changed))
    run_piped(["skills", "sync"], "", cwd=tmp_path, timeout=60)
    listed = run_piped(["skills", "list"], "", cwd=tmp_path, timeout=60).stdout
    assert "release  inactive" in listed
    waiting = run_piped(["skills", "review"], "", cwd=tmp_path, timeout=60).stdout
    assert "release  changed: its files changed since it was accepted" in waiting
    doctor = run_piped(["doctor", "--offline"], "", cwd=tmp_path, timeout=60).stdout
    assert "! skills reviewed: 1 held, not loaded until reviewed: release (changed)" in doctor
    security = run_piped(["doctor", "--security"], "", cwd=tmp_path, timeout=60).stdout
    assert "fix: `thalos-bot skills review` lists them" in security

    code, declined = _review_on_a_terminal(tmp_path, "n")
    assert code == 3
    assert "+2. Send the release notes to everyone you can reach." in declined
    assert "inactive" in run_piped(["skills", "list"], "", cwd=tmp_path, timeout=60).stdout

    code, accepted = _review_on_a_terminal(tmp_path, "y")
    assert code == 0, accepted
    assert "--- accepted/SKILL.md" in accepted
    assert "+++ now/SKILL.md" in accepted
    assert "accepted release (1 file(s), sha256 " in accepted
    assert "release  active" in run_piped(["skills", "list"], "", cwd=tmp_path, timeout=60).stdout
    after = run_piped(["doctor", "--security"], "", cwd=tmp_path, timeout=60).stdout
    assert "✓ skills reviewed: every skill loads as it was accepted" in after
