"""Things new users tripped on: each one as they met it."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.channels.cli_process import PtySession, run_piped
from thalos_bot.channels.registry import discover, validate_channels
from thalos_bot.cli.main import main
from thalos_bot.config.loader import ConfigError, load_settings

SCRIPTED = 'state_dir = "state"\n[provider]\nkind = "scripted"\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_misspelt_channel_gets_a_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path, SCRIPTED + "[channels.consle]\nenabled = true\n")
    assert main(["check", "-c", str(config)]) == 2
    err = capsys.readouterr().err
    assert "channels.consle: no channel plugin named 'consle' is installed" in err
    assert "(did you mean 'console'?)" in err


def test_a_missing_telegram_plugin_names_a_command_that_works(tmp_path: Path) -> None:
    config = write(tmp_path, SCRIPTED + "[channels.telegram]\nenabled = true\n")
    loaded = load_settings(config)
    without = {name: p for name, p in discover().items() if name != "telegram"}
    with pytest.raises(ConfigError) as caught:
        validate_channels(loaded.settings, loaded.label, without)
    [problem] = caught.value.problems
    assert "pip install ./channels/telegram" in problem
    assert "thalos-bot[telegram]" not in problem, "that extra does not exist"


def test_doctor_gives_one_line_per_config_problem_and_counts_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(
        tmp_path,
        SCRIPTED + "[pump]\nflush = 1\nidle = 2\n[logging]\nlevel = 'loud'\nformats = 'x'\n",
    )
    assert main(["doctor", "--offline", "-c", str(config)]) == 1
    out = capsys.readouterr().out
    failures = [line for line in out.splitlines() if line.startswith("✗ configuration")]
    assert len(failures) == 4, out
    assert any("pump.flush: unknown key" in line for line in failures)
    assert any("logging.formats: unknown key" in line for line in failures)
    assert "4 problems found." in out


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def memory(config: Path, *args: str) -> Ran:
    """``thalos-bot memory ...`` in this process, with stdin not a terminal."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["memory", *args, "-c", str(config)])
    return Ran(code, out.getvalue(), err.getvalue())


def test_memory_add_defaults_to_the_console_principal(tmp_path: Path) -> None:
    config = write(tmp_path, SCRIPTED + "[channels.console]\nprincipal_id = 'ada'\n")
    added = memory(config, "add", "Prefers tea")
    assert added.returncode == 0, added.stderr
    assert added.stdout.rstrip().endswith("for ada")
    exported = [json.loads(line) for line in memory(config, "export").stdout.splitlines()]
    assert [(m["owner"], m["text"]) for m in exported] == [("ada", "Prefers tea")]


@contextlib.contextmanager
def terminal(args: list[str], cwd: Path) -> Iterator[PtySession]:
    session = PtySession(args, cwd=cwd)
    try:
        yield session
    except BaseException:
        session.process.kill()
        session.close()
        raise


@pytest.mark.slow
def test_memory_forget_asks_in_a_terminal(tmp_path: Path) -> None:
    config = write(tmp_path, SCRIPTED)
    added = memory(config, "add", "Keep me")
    memory_id = added.stdout.split()[1]
    args = ["memory", "forget", memory_id, "-c", str(config)]

    with terminal(args, tmp_path) as refused:
        refused.read_until(lambda out: "for good (Keep me)? [y/N]" in out, timeout=60)
        refused.send("n\r")
        refused.read_until(lambda out: "kept: nothing was deleted" in out)
        assert refused.close() == 1
    assert "Keep me" in memory(config, "export").stdout

    with terminal(args, tmp_path) as agreed:
        agreed.read_until(lambda out: "[y/N]" in out, timeout=60)
        agreed.send("y\r")
        agreed.read_until(lambda out: "deleted m-" in out)
        assert agreed.close() == 0
    assert memory(config, "export").stdout == ""


@pytest.mark.slow
def test_memory_forget_with_yes_or_from_a_script_does_not_ask(tmp_path: Path) -> None:
    config = write(tmp_path, SCRIPTED)
    first = memory(config, "add", "one").stdout.split()[1]
    second = memory(config, "add", "two").stdout.split()[1]
    with terminal(["memory", "forget", first, "--yes", "-c", str(config)], tmp_path) as session:
        session.read_until(lambda out: f"deleted {first}" in out, timeout=60)
        assert session.close() == 0
    assert "[y/N]" not in session.visible
    piped = memory(config, "forget", second)
    assert piped.returncode == 0, piped.stderr
    assert memory(config, "export").stdout == ""


@pytest.mark.slow
def test_no_skills_warning_for_the_default_root_only_for_a_configured_one(
    tmp_path: Path,
) -> None:
    write(tmp_path, SCRIPTED)
    assert run_piped(["chat"], "hi\n", cwd=tmp_path).returncode == 0
    log = (tmp_path / "state" / "chat.log").read_text()
    assert "skills-root-unreadable" not in log
    write(tmp_path, SCRIPTED + "[skills]\nroots = ['./my-skills']\n")
    assert run_piped(["chat"], "hi\n", cwd=tmp_path).returncode == 0
    log = (tmp_path / "state" / "chat.log").read_text()
    assert "skills-root-unreadable" in log
    assert "my-skills" in log


@pytest.mark.slow
def test_run_in_a_terminal_keeps_log_lines_out_of_the_console(tmp_path: Path) -> None:
    write(tmp_path, SCRIPTED + "[logging]\nlevel = 'info'\n")
    session = PtySession(["run"], cwd=tmp_path)
    try:
        session.read_until(lambda out: "logs go to" in out, timeout=60)
        session.send("hello\r")
        session.read_until(
            lambda out: "You said: hello" in out and "›" in out.split("You said: hello")[-1]
        )
        session.send_eof()
        session.close()
    except BaseException:
        session.process.kill()
        session.close()
        raise
    assert "database-opened" not in session.visible
    assert "ready" not in session.visible.replace("already", "")
    log = (tmp_path / "state" / "chat.log").read_text()
    assert '"event": "ready"' in log or '"event":"ready"' in log


def test_doctor_says_where_this_setup_keeps_a_missing_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = write(tmp_path, 'state_dir = "state"\n[provider]\nmodel = "claude-sonnet-5-5"\n')
    assert main(["doctor", "--offline", "-c", str(config)]) == 1
    out = capsys.readouterr().out
    secrets = tmp_path.resolve() / "thalos-bot.env"
    assert f"put ANTHROPIC_API_KEY=... in {secrets}" in out, out
    assert "/etc/thalos-bot" not in out, "a local setup is not pointed at the system unit's file"


def test_a_flag_must_be_true_or_false_not_a_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path, SCRIPTED + '[channels.console]\nenabled = "yes"\n')
    assert main(["check", "-c", str(config)]) == 2
    err = capsys.readouterr().err
    assert "channels.console.enabled: must be true or false, not 'yes'" in err
    config = write(tmp_path, SCRIPTED + '[telemetry]\ntracing = "yes"\n')
    assert main(["check", "-c", str(config)]) == 2
    err = capsys.readouterr().err
    assert "telemetry.tracing: input should be a valid boolean" in err
    assert "Traceback" not in err
