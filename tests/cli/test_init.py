"""``thalos-bot init``: a commented bot.toml from the shipped sample, never overwritten
without --force, interactive in a terminal and flags-only otherwise."""

from __future__ import annotations

import secrets
import stat
import tomllib
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.channels.cli_process import PtySession, run_piped
from thalos_bot.cli.main import main
from thalos_bot.shipped import shipped
from thalos_bot_telegram.manifest import manifest as telegram_manifest

TELEGRAM_SECRETS = telegram_manifest.setup.secrets if telegram_manifest.setup else ()


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
        session.read_until(lambda out: "Serve the web chat page on this machine? (y/N)" in out)
        session.send("y\r")
        session.read_until(lambda out: "Use Slack? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Discord? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Matrix? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Signal (through signal-cli)? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use email? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Write the secrets file now" in out)
        session.send("\r")
        session.read_until(lambda out: "Pair your Telegram account now? (y/N) [n]:" in out)
        session.send("n\r")
        session.read_until(lambda out: "offline echo model" in out)
        assert "thalos-bot telegram pair" in session.visible, "pairing later is explained"
        assert "thalos-bot web pair" in session.visible
        session.send("\r")
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise
    config = tomllib.loads((tmp_path / "bot.toml").read_text())
    assert config["provider"]["model"] == "claude-asked"
    assert config["state_dir"] == "state"
    assert config["channels"]["telegram"]["enabled"] is False
    assert config["channels"]["web"] == {
        "enabled": True,
        "listen": "127.0.0.1:8765",
        "principals": ["local"],
    }
    assert not (tmp_path / "thalos-bot.env").exists(), "no secrets file unless asked for"


def test_an_answer_that_is_not_yes_or_no_is_asked_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import argparse

    import tomlkit

    from thalos_bot.cli.cmd_init import gather

    replies = iter(["claude-sonnet-5-5", "data", "sure", "yes", "no", "n"])
    asked: list[str] = []

    def ask(question: str) -> str:
        asked.append(question)
        return next(replies)

    args = argparse.Namespace(
        model=None,
        state_dir=None,
        telegram=None,
        web=None,
        slack=None,
        discord=False,
        matrix=False,
        signal=False,
        email=False,
    )
    sample = tomlkit.parse(shipped("bot.toml").read_text())
    answers = gather(args, sample, ask)
    assert answers.has("telegram")
    assert [q.split(" [")[0] for q in asked] == [
        "Model",
        "State folder (relative to bot.toml)",
        "Use Telegram? (y/N)",
        "Use Telegram? (y/N)",
        "Serve the web chat page on this machine? (y/N)",
        "Use Slack? (y/N)",
    ]
    assert not answers.has("web")
    assert "Please answer y or n." in capsys.readouterr().out


def test_init_offers_the_web_channel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "bot.toml"
    assert main(["init", str(tmp_path), "--web", "--model", "claude-sonnet-5-5"]) == 0
    config = tomllib.loads(target.read_text())
    assert config["channels"]["web"]["enabled"] is True
    assert config["channels"]["web"]["listen"] == "127.0.0.1:8765"
    out = capsys.readouterr().out
    assert "thalos-bot web pair" in out
    run = next(line for line in out.splitlines() if "thalos-bot run" in line)
    assert "the chat page on http://127.0.0.1:8765" in run, "init says to run it, and where"
    assert main(["check", "-c", str(target)]) == 0
    assert "web (enabled): a chat page on http://127.0.0.1:8765" in capsys.readouterr().out


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
    from thalos_bot.channels.registry import discover
    from thalos_bot.cli import cmd_init

    without = {name: p for name, p in discover().items() if name != "telegram"}
    monkeypatch.setattr(cmd_init, "discover", lambda: without)
    assert main(["init", str(tmp_path), "--telegram", "--model", "claude-sonnet-5-5"]) == 0
    err = capsys.readouterr().err
    assert "the telegram channel is not installed" in err
    assert "pip install ./channels/telegram" in err
    assert "telegram" not in tomllib.loads((tmp_path / "bot.toml").read_text())["channels"]


def fake_key() -> str:
    """Built at run time: no real (or real-looking) key is ever in a fixture."""
    return f"sk-test-{secrets.token_hex(12)}"


def test_the_secrets_file_is_written_0600_and_never_into_bot_toml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from thalos_bot.cli.init_offers import offer_secrets

    key, token = fake_key(), f"123456:{secrets.token_hex(16)}"
    replies = iter(["maybe", "y"])
    typed = iter(["has a space", key, token])
    offered = offer_secrets(
        tmp_path, TELEGRAM_SECRETS, ask=lambda _: next(replies), ask_secret=lambda _: next(typed)
    )
    path = tmp_path / "thalos-bot.env"
    assert offered.secrets == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    assert lines == [f"ANTHROPIC_API_KEY={key}", f"TELEGRAM_BOT_TOKEN={token}"]
    out = capsys.readouterr().out
    assert "Please answer y or n." in out
    assert "That does not look like a ANTHROPIC_API_KEY" in out
    assert f"Wrote {path}" in out
    assert "set -a; . " in out
    assert f"EnvironmentFile={path.resolve()}" in out
    assert key not in out
    assert token not in out
    path.write_text("mine\n")
    again = offer_secrets(tmp_path, TELEGRAM_SECRETS, ask=lambda _: "y", ask_secret=lambda _: key)
    assert again.secrets is None
    assert path.read_text() == "mine\n", "an existing secrets file is never overwritten"


def test_a_secrets_file_that_cannot_be_written_is_said_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from thalos_bot.cli.init_offers import offer_secrets

    missing = tmp_path / "gone"  # its folder is not there: the write fails
    offered = offer_secrets(missing, (), ask=lambda _: "y", ask_secret=lambda _: "")
    assert offered.secrets is None
    out = capsys.readouterr().out
    assert "error: cannot write" in out
    assert "No such file or directory" in out
    assert "Traceback" not in out


def test_pairing_now_needs_the_token_and_says_how_to_pair_later(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from thalos_bot.cli.init_offers import Offered
    from thalos_bot.cli.init_offers import offer_pairing as offer

    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    ran: list[list[str]] = []

    def command(argv: Sequence[str]) -> int:
        ran.append(list(argv))
        return 0

    target = tmp_path / "bot.toml"
    setup = telegram_manifest.setup
    assert setup is not None

    def offer_pairing(offered: Offered, answer: str) -> int | None:
        return offer(
            target,
            offered,
            "telegram",
            setup,
            title="Telegram",
            ask=lambda _: answer,
            command=command,
        )

    assert offer_pairing(Offered(), "y") is None
    out = capsys.readouterr().out
    assert "Pairing needs TELEGRAM_BOT_TOKEN in the environment" in out
    assert "export TELEGRAM_BOT_TOKEN=" in out
    assert f"thalos-bot telegram pair --config {target}" in out
    assert ran == []
    assert offer_pairing(Offered(), "n") is None
    assert ran == []
    token = f"123456:{secrets.token_hex(16)}"
    written = Offered(secrets=tmp_path / "thalos-bot.env", values={"TELEGRAM_BOT_TOKEN": token})
    assert offer_pairing(written, "y") == 0
    assert ran == [["telegram", "pair", "--config", str(target)]]


@pytest.mark.slow
def test_init_in_a_terminal_writes_the_secrets_file_and_offers_a_trial(tmp_path: Path) -> None:
    key = fake_key()
    session = PtySession(["init"], cwd=tmp_path)
    try:
        session.read_until(lambda out: "Model [" in out, timeout=60)
        session.send("claude-sonnet-5-5\r")
        session.read_until(lambda out: "State folder (relative to bot.toml) [state]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Telegram? (y/N) [n]:" in out)
        session.send("n\r")
        session.read_until(lambda out: "Serve the web chat page on this machine?" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Slack? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Discord? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Matrix? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use Signal (through signal-cli)? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Use email? (y/N) [n]:" in out)
        session.send("\r")
        session.read_until(lambda out: "Write the secrets file now (thalos-bot.env" in out)
        session.send("y\r")
        session.read_until(lambda out: "ANTHROPIC_API_KEY (" in out)
        session.send(key + "\r")
        session.read_until(lambda out: "offline echo model" in out)
        assert "TELEGRAM_BOT_TOKEN (" not in session.visible, "no Telegram, no token asked"
        assert "Pair your Telegram" not in session.visible
        assert "set -a; . ./thalos-bot.env; set +a" in session.visible
        session.send("y\r")
        session.read_until(lambda out: "no API key is used" in out, timeout=60)
        session.send("hello from init\r")
        session.read_until(lambda out: "You said: hello from init" in out, timeout=60)
        session.send("/exit\r")
        assert session.close() == 0
    except BaseException:
        session.process.kill()
        session.close()
        raise
    assert key not in session.output, "a key is typed without echo"
    path = tmp_path / "thalos-bot.env"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert f"ANTHROPIC_API_KEY={key}" in path.read_text()
    text = (tmp_path / "bot.toml").read_text()
    assert key not in text
    assert not {"api_key", "ANTHROPIC_API_KEY"} & set(tomllib.loads(text)), "no secret in it"


def test_slack_is_offered_and_its_table_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", str(tmp_path), "--slack", "--model", "claude-sonnet-5-5"]) == 0
    config = tomllib.loads((tmp_path / "bot.toml").read_text())
    assert config["channels"]["slack"] == {
        "enabled": False,
        "allowed_users": [],
        "channels": [],
        "assistant_threads": False,
        "principal_id": "local",
        "streaming": "auto",
    }
    out = capsys.readouterr().out
    assert "export SLACK_APP_TOKEN=" in out
    assert "export SLACK_BOT_TOKEN=" in out
    assert main(["check", "-c", str(tmp_path / "bot.toml")]) == 0
    checked = capsys.readouterr().out
    assert "Socket Mode" in checked, "check describes the Slack section"


def test_the_secrets_file_keeps_every_chosen_transports_tokens(tmp_path: Path) -> None:
    from thalos_bot.cli.init_offers import offer_secrets
    from thalos_bot_slack.manifest import manifest as slack_manifest

    assert slack_manifest.setup is not None
    key, app, bot = fake_key(), f"xapp-{secrets.token_hex(8)}", f"xoxb-{secrets.token_hex(8)}"
    typed = iter([key, app, bot])
    offered = offer_secrets(
        tmp_path, slack_manifest.setup.secrets, ask=lambda _: "y", ask_secret=lambda _: next(typed)
    )
    assert offered.secrets is not None
    lines = [line for line in offered.secrets.read_text().splitlines() if "=" in line]
    lines = [line for line in lines if not line.startswith("#")]
    assert lines == [f"ANTHROPIC_API_KEY={key}", f"SLACK_APP_TOKEN={app}", f"SLACK_BOT_TOKEN={bot}"]


def test_run_without_a_key_says_so_and_offline_needs_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from thalos_bot.cli import cmd_serve
    from thalos_bot.config.loader import LoadedConfig

    assert main(["init", str(tmp_path), "--web", "--model", "claude-sonnet-5-5"]) == 0
    capsys.readouterr()
    served: list[LoadedConfig] = []

    def serve(loaded: LoadedConfig, channels: list[str] | None) -> int:
        served.append(loaded)
        return 0

    monkeypatch.setattr(cmd_serve, "_serve", serve)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = tmp_path / "bot.toml"
    assert cmd_serve.run_daemon(argparse.Namespace(config=config, offline=False)) == 0
    err = capsys.readouterr().err
    assert "warning: ANTHROPIC_API_KEY is not set" in err
    assert "thalos-bot run --offline" in err
    assert cmd_serve.run_daemon(argparse.Namespace(config=config, offline=True)) == 0
    assert "ANTHROPIC_API_KEY" not in capsys.readouterr().err
    assert [loaded.settings.provider.kind for loaded in served] == ["anthropic", "scripted"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", fake_key())
    assert cmd_serve.run_daemon(argparse.Namespace(config=config, offline=False)) == 0
    assert "warning" not in capsys.readouterr().err
