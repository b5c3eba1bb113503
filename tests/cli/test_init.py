"""``thalos-bot init``: a commented bot.toml from the shipped sample, never overwritten
without --force, interactive in a terminal and flags-only otherwise."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.channels.cli_process import PtySession, run_piped
from thalos_bot.cli.main import main
from thalos_bot.shipped import shipped


def comments(text: str) -> list[str]:
    return [line.split("#", 1)[1].strip() for line in text.splitlines() if "#" in line]


def test_flags_without_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "bot"
    code = main(["init", str(folder), "--model", "claude-test-1", "--state-dir", "data"])
    assert code == 0
    text = (folder / "bot.toml").read_text()
    config = tomllib.loads(text)
    assert config["provider"]["model"] == "claude-test-1"
    assert config["state_dir"] == "data"
    assert "telegram" not in config["channels"]
    sample = shipped("bot.toml").read_text()
    assert comments(text) == comments(sample), "every comment of the sample is kept"
    assert sorted(p.name for p in (folder / "skills").iterdir()) == sorted(
        p.name for p in shipped("skills").iterdir()
    )
    out = capsys.readouterr().out
    assert f"thalos-bot check -c {folder / 'bot.toml'}" in out
    assert "telegram pair" not in out
    assert main(["check", "-c", str(folder / "bot.toml")]) == 0


def test_never_overwrites_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "bot.toml"
    target.write_text("# mine\n")
    assert main(["init", str(tmp_path)]) == 1
    assert "already exists; pass --force" in capsys.readouterr().err
    assert target.read_text() == "# mine\n"
    assert main(["init", str(tmp_path), "--force", "--telegram"]) == 0
    config = tomllib.loads(target.read_text())
    assert config["channels"]["telegram"] == {
        "enabled": False,
        "allowed_user_ids": [],
        "principal_id": "local",
        "roles": [],
        "streaming": "draft",
    }
    out = capsys.readouterr().out
    assert "export TELEGRAM_BOT_TOKEN=" in out
    assert "thalos-bot telegram pair" in out
    assert main(["check", "-c", str(target)]) == 0, "pairing, not init, turns Telegram on"


@pytest.mark.slow
def test_piped_init_takes_the_defaults(tmp_path: Path) -> None:
    result = run_piped(["init"], "claude-typed\ny\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    config = tomllib.loads((tmp_path / "bot.toml").read_text())
    sample = tomllib.loads(shipped("bot.toml").read_text())
    assert config["provider"]["model"] == sample["provider"]["model"]
    assert "telegram" not in config["channels"], "no terminal: nothing is asked"


@pytest.mark.slow
def test_init_asks_in_a_terminal(tmp_path: Path) -> None:
    session = PtySession(["init"], cwd=tmp_path)
    try:
        session.read_until(lambda out: "Model [" in out, timeout=60)
        session.send("claude-asked\r")
        session.read_until(lambda out: "State folder (relative to bot.toml) [state]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Telegram? (y/N) [n]:" in out)
        session.send("y\r")
        session.read_until(lambda out: "thalos-bot telegram pair" in out)
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise
    config = tomllib.loads((tmp_path / "bot.toml").read_text())
    assert config["provider"]["model"] == "claude-asked"
    assert config["state_dir"] == "state"
    assert config["channels"]["telegram"]["enabled"] is False
