"""``init`` writes only the channels chosen (issue 38, finding 1: choosing the web page
also turned on Slack, Matrix and Discord with placeholders), and ``check`` refuses what
``run`` refuses: an enabled channel whose secret is not in the environment."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.channels.cli_process import run_piped
from thalos_bot.cli.main import main

SECRETS = (
    "SLACK_APP_TOKEN",
    "SLACK_BOT_TOKEN",
    "DISCORD_BOT_TOKEN",
    "TELEGRAM_BOT_TOKEN",
    "THALOS_MATRIX_ACCESS_TOKEN",
    "THALOS_MATRIX_PASSWORD",
    "THALOS_TELEGRAM_WEBHOOK_SECRET",
)


@pytest.fixture(autouse=True)
def _no_channel_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)


def tables(target: Path) -> dict[str, bool]:
    """Each ``[channels.*]`` table the file has, and whether it is enabled."""
    channels = tomllib.loads(target.read_text())["channels"]
    return {name: section.get("enabled") is True for name, section in channels.items()}


@pytest.mark.parametrize(
    "chosen",
    [
        (),
        ("web",),
        ("telegram",),
        ("slack",),
        ("discord",),
        ("telegram", "web"),
        ("web", "slack"),
        ("telegram", "web", "slack", "discord"),
    ],
    ids=lambda chosen: "+".join(chosen) or "none",
)
def test_init_writes_the_chosen_channels_and_no_other(
    tmp_path: Path, chosen: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    flags = [f"--{n}" if n in chosen else f"--no-{n}" for n in ("telegram", "web", "slack")]
    flags.append("--discord" if "discord" in chosen else "--no-discord")
    assert main(["init", str(tmp_path), "--model", "claude-sonnet-5-5", *flags]) == 0
    written = tables(tmp_path / "bot.toml")
    assert sorted(written) == sorted({"console", *chosen})
    # Only the web page needs no secret, so only it (and the console) start enabled; the
    # others wait for their pairing or allowlist.
    assert {n for n, on in written.items() if on} == {"console", *({"web"} & set(chosen))}
    capsys.readouterr()
    assert main(["check", "-c", str(tmp_path / "bot.toml")]) == 0, capsys.readouterr().err


def test_the_web_choice_written_without_a_terminal_passes_check(tmp_path: Path) -> None:
    # The reproduction, as the person typed it.
    done = run_piped(["init", "--web", "--no-slack", "--no-discord"], "", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert tables(tmp_path / "bot.toml") == {"console": True, "web": True}
    checked = run_piped(["check"], "", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "slack" not in checked.stdout
    assert "matrix" not in checked.stdout


def test_check_refuses_an_enabled_channel_without_its_secret_as_run_does(
    tmp_path: Path,
) -> None:
    assert main(["init", str(tmp_path), "--slack", "--model", "claude-sonnet-5-5"]) == 0
    target = tmp_path / "bot.toml"
    text = target.read_text()
    marker = "enabled = false # `thalos-bot slack pair` turns it on"
    assert marker in text
    target.write_text(
        text.replace(marker, "enabled = true").replace(
            "allowed_users = []", 'allowed_users = ["U0123ABCD"]'
        )
    )
    checked = run_piped(["check"], "", cwd=tmp_path)
    assert checked.returncode == 2
    assert "channels.slack is enabled and SLACK_APP_TOKEN is not set" in checked.stderr
    assert "SLACK_BOT_TOKEN is not set" in checked.stderr
    assert "Traceback" not in checked.stderr
    ran = run_piped(["run"], "", cwd=tmp_path, timeout=90)
    assert ran.returncode == 2
    assert "SLACK_APP_TOKEN is not set" in ran.stderr
    tokens = {"SLACK_APP_TOKEN": "xapp-1-test", "SLACK_BOT_TOKEN": "xoxb-test"}
    assert run_piped(["check"], "", cwd=tmp_path, env=tokens).returncode == 0


def test_check_asks_for_the_webhook_secret_in_webhook_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bot.toml").write_text(
        "[channels.telegram]\n"
        "enabled = true\n"
        "allowed_user_ids = [42]\n"
        'mode = "webhook"\n'
        'webhook_url = "https://bot.example.org/telegram"\n'
    )
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:abc")
    assert main(["check", "-c", str(tmp_path / "bot.toml")]) == 2
    err = capsys.readouterr().err
    assert "THALOS_TELEGRAM_WEBHOOK_SECRET is not set" in err
    assert "TELEGRAM_BOT_TOKEN" not in err
    monkeypatch.setenv("THALOS_TELEGRAM_WEBHOOK_SECRET", "s3cret_0123")
    assert main(["check", "-c", str(tmp_path / "bot.toml")]) == 0
