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


def test_an_answer_that_is_not_yes_or_no_is_asked_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    import tomlkit

    from thalos_bot.cli.cmd_init import gather

    replies = iter(["claude-sonnet-5-5", "data", "sure", "yes"])
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return next(replies)

    args = argparse.Namespace(model=None, state_dir=None, telegram=None)
    sample = tomlkit.parse(shipped("bot.toml").read_text())
    answers = gather(args, sample, ask)
    assert answers.telegram is True
    assert [q.split(" [")[0] for q in asked] == [
        "Model",
        "State folder (relative to bot.toml)",
        "Use Telegram? (y/N)",
        "Use Telegram? (y/N)",
    ]
    assert "Please answer y or n." in capsys.readouterr().out


def test_an_unpriced_model_is_warned_about_and_offline_is_offered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", str(tmp_path / "a"), "--model", "claude-test-1"]) == 0
    captured = capsys.readouterr()
    assert "warning: no price is known for the model 'claude-test-1'" in captured.err
    assert "thalos-bot chat --offline" in captured.out
    assert "thalos-bot service install" in captured.out
    assert main(["init", str(tmp_path / "b"), "--model", "claude-sonnet-5-5"]) == 0
    assert "no price is known" not in capsys.readouterr().err


def test_telegram_is_left_out_when_its_channel_is_not_installed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from thalos_bot.cli import cmd_init

    monkeypatch.setattr(cmd_init, "telegram_installed", lambda: False)
    assert main(["init", str(tmp_path), "--telegram", "--model", "claude-sonnet-5-5"]) == 0
    assert "the Telegram channel is not installed" in capsys.readouterr().err
    assert "telegram" not in tomllib.loads((tmp_path / "bot.toml").read_text())["channels"]
