"""``thalos-bot doctor`` says how to fix what fails, gives causes for unreachable
endpoints, warns about settings that do not fit together, and ``--fix`` mends the safe
things after a backup."""

from __future__ import annotations

import socket
import sqlite3
import stat
from pathlib import Path

import pytest

from tests.channels.cli_process import run_piped
from thalos_bot.channels.checks import Check
from thalos_bot.cli.main import main
from thalos_bot.service.doctor import run_doctor

pytestmark = pytest.mark.anyio


def write(tmp_path: Path, text: str, state: str = "state") -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(f'state_dir = "{state}"\n' + text, encoding="utf-8")
    return path


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _every_cross_has_a_fix(out: str) -> None:
    lines = out.splitlines()
    crosses = [i for i, line in enumerate(lines) if line.startswith("✗")]
    assert crosses, out
    for i in crosses:
        assert lines[i + 1].startswith("    fix: "), f"no fix under {lines[i]!r}:\n{out}"


def test_every_failure_has_a_fix_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    (tmp_path / "blocker").write_text("a file where the state folder should be")
    config = write(
        tmp_path,
        '[[mcp_servers]]\nname = "fs"\ncommand = "/no/such/binary"\n'
        "[skills]\nroots = ['./no-such-skills']\n",
        state="blocker/state",
    )
    assert main(["doctor", "--offline", "--config", str(config)]) == 1
    out = capsys.readouterr().out
    _every_cross_has_a_fix(out)
    assert "✗ state directory writable" in out
    assert "✗ ANTHROPIC_API_KEY is set" in out
    assert "✗ MCP server fs" in out
    bad = write(tmp_path, "[pump]\nflush = 1\n")
    assert main(["doctor", "--offline", "--config", str(bad)]) == 1
    _every_cross_has_a_fix(capsys.readouterr().out)


async def test_no_tick_on_the_database_when_the_state_folder_fails(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("x")
    config = write(tmp_path, '[provider]\nkind = "scripted"\n', state="blocker/state")
    checks = by_name(await run_doctor(config, offline=True))
    assert checks["state directory writable"].outcome == "fail"
    database = checks["database and migrations"]
    assert database.outcome == "skip"
    assert database.detail == "the state folder is not usable"


async def test_an_unreachable_endpoint_says_where_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-doctor-test")
    url = f"http://127.0.0.1:{_closed_port()}"
    config = write(tmp_path, f'[provider]\nbase_url = "{url}"\nmax_retries = 0\n')
    check = by_name(await run_doctor(config, offline=False))["Anthropic endpoint answers"]
    assert check.outcome == "fail"
    assert check.detail == f"cannot reach {url}: the connection was refused (nothing listens there)"
    assert "HTTPS_PROXY" in check.fix


def test_no_log_lines_in_the_output(tmp_path: Path) -> None:
    # A failing MCP server logs warnings as it fails; none may reach doctor's output.
    write(tmp_path, '[[mcp_servers]]\nname = "fs"\ncommand = "/no/such/binary"\n')
    result = run_piped(["doctor", "--offline"], "", cwd=tmp_path, timeout=60)
    assert result.returncode == 1
    assert "✗ MCP server fs" in result.stdout
    assert result.stderr == ""
    assert '"event"' not in result.stdout


async def test_settings_that_do_not_fit_together_are_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "systemd-state"))
    config = write(
        tmp_path,
        '[provider]\nkind = "scripted"\n'
        '[[schedules]]\nid = "daily"\ntask = "hi"\ncron = "0 9 * * *"\n'
        'deliver_to = "telegram:42"\nprincipal = "owner"\n',
    )
    checks = by_name(await run_doctor(config, offline=True))
    source = checks["state folder from systemd"]
    assert source.outcome == "warn"
    assert "wins over $STATE_DIRECTORY" in source.detail
    schedule = checks["schedule daily"]
    assert schedule.outcome == "warn"
    assert "delivers to the telegram channel, which is not enabled" in schedule.detail
    console = checks["console has a terminal"]  # pytest's stdin is no terminal
    assert console.outcome == "warn"
    assert "enabled = false" in console.fix


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_fix_mends_modes_after_a_backup_and_lists_the_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path, '[provider]\nkind = "scripted"\n')
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    with sqlite3.connect(state / "thalos.db") as db:
        db.execute("CREATE TABLE kept (x)")
        db.execute("INSERT INTO kept VALUES (42)")
    (state / "thalos.db").chmod(0o644)
    secrets = tmp_path / "thalos-bot.env"
    secrets.write_text("ANTHROPIC_API_KEY=sk-ant-x\n")
    secrets.chmod(0o644)
    main(["doctor", "--offline", "--fix", "--config", str(config)])
    out = capsys.readouterr().out
    assert out.startswith("--fix changed:\n")
    assert f"  {state}: mode 0755 → 0700" in out
    assert f"  {state / 'thalos.db'}: mode 0644 → 0600" in out
    assert f"  {secrets}: mode 0644 → 0600 (it holds secrets)" in out
    assert _mode(state) == 0o700
    assert _mode(state / "thalos.db") == 0o600
    assert _mode(secrets) == 0o600
    [backup] = (state / "backups").iterdir()
    assert f"  backed up {state / 'thalos.db'} to {backup}" in out
    with sqlite3.connect(backup) as copy:
        assert copy.execute("SELECT x FROM kept").fetchall() == [(42,)]
    assert "state files private" not in out, "nothing is left to warn about"
    main(["doctor", "--offline", "--fix", "--config", str(config)])
    assert capsys.readouterr().out.startswith("--fix: nothing needed mending.")


def test_fix_makes_a_missing_state_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path, '[provider]\nkind = "scripted"\n', state="deep/state")
    main(["doctor", "--offline", "--fix", "--config", str(config)])
    out = capsys.readouterr().out
    assert f"  created the state folder {tmp_path / 'deep' / 'state'} (mode 0700)" in out
    assert _mode(tmp_path / "deep" / "state") == 0o700
