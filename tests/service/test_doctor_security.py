"""``thalos-bot doctor --security``: no ✗ on the shipped sample nor on the hardened
example; each exposure provoked shows its ✗ and its fix."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.channels.cli_process import run_piped
from thalos_bot.channels.checks import Check
from thalos_bot.service.doctor_security import security_checks, systemd_check

ROOT = Path(__file__).parents[2]
HARDENED = ROOT / "deploy" / "hardened.bot.toml"
SECRET = {"GITHUB_HOOK_SECRET": "a-long-random-test-secret"}
NO_UNIT: list[Path] = []


def _copy(source: Path, tmp_path: Path, *, edit: tuple[str, str] | None = None) -> Path:
    text = source.read_text(encoding="utf-8").replace('"/var/lib/thalos-bot"', '"state"')
    if edit is not None:
        assert edit[0] in text, edit[0]
        text = text.replace(*edit)
    target = tmp_path / "bot.toml"
    target.write_text(text, encoding="utf-8")
    target.chmod(0o644)
    return target


def _by_name(config: Path) -> dict[str, Check]:
    return {c.name: c for c in security_checks(config, unit_paths=NO_UNIT)}


def _failed(config: Path) -> dict[str, Check]:
    return {name: c for name, c in _by_name(config).items() if c.outcome == "fail"}


def test_the_shipped_sample_has_nothing_to_fix(tmp_path: Path) -> None:
    _copy(ROOT / "bot.toml", tmp_path)
    result = run_piped(["doctor", "--security"], "", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "✗" not in result.stdout
    assert "listeners: none" in result.stdout
    assert "nothing to fix" in result.stdout


def test_the_hardened_example_has_nothing_to_fix(tmp_path: Path) -> None:
    _copy(HARDENED, tmp_path)
    result = run_piped(["doctor", "--security"], "", cwd=tmp_path, env=SECRET)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "✗" not in result.stdout
    for line in (
        "✓ web listener bind: 10.0.0.2:8765",
        "✓ web listener TLS: behind the TLS proxy at 10.0.0.1",
        "600 requests/min per address",
        "✓ tools of files ask first: files__*: ask; allowed without asking: files__read_*",
        "✓ admin role: held by ana",
    ):
        assert line in result.stdout


def test_a_public_listener_without_a_named_proxy_is_refused_with_its_fix(
    tmp_path: Path,
) -> None:
    """A listener on another address with no TLS proxy named (or no https:// address)
    does not start: the configuration is refused, and doctor --security says so."""
    _copy(HARDENED, tmp_path, edit=('forwarded_allow_ips = ["10.0.0.1"]', ""))
    result = run_piped(["doctor", "--security"], "", cwd=tmp_path, env=SECRET)
    assert result.returncode == 1
    assert "✗ configuration: bot.toml: channels.web: public = true serves other" in result.stdout
    assert 'forwarded_allow_ips = ["10.0.0.5"]' in result.stdout
    refused = run_piped(["check"], "", cwd=tmp_path, env=SECRET)
    assert refused.returncode != 0
    assert "must travel over TLS" in refused.stdout + refused.stderr
    _copy(HARDENED, tmp_path, edit=("https://bot.example.org", "http://bot.example.org"))
    again = run_piped(["doctor", "--security"], "", cwd=tmp_path, env=SECRET)
    assert "public = true serves other machines" in again.stdout


def test_a_public_listener_without_a_rate_limit_is_a_fail(tmp_path: Path) -> None:
    config = _copy(HARDENED, tmp_path, edit=("rate_limit = 600", "rate_limit = 0"))
    failed = _failed(config)
    assert "no per-address rate limit" in failed["web listener limits"].detail
    assert "rate_limit" in failed["web listener limits"].fix


def test_a_hook_without_its_secret_is_a_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_HOOK_SECRET", raising=False)
    failed = _failed(_copy(HARDENED, tmp_path))
    assert "$GITHUB_HOOK_SECRET is not set" in failed["webhook github secret"].detail
    assert "GITHUB_HOOK_SECRET=" in failed["webhook github secret"].fix


def test_loose_files_are_a_fail_with_chmod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_HOOK_SECRET", "x")
    config = _copy(HARDENED, tmp_path)
    (tmp_path / "state").mkdir(mode=0o755)
    (tmp_path / "state").chmod(0o755)
    secrets = tmp_path / "thalos-bot.env"
    secrets.write_text("GITHUB_HOOK_SECRET=x\n", encoding="utf-8")
    secrets.chmod(0o644)
    config.chmod(0o666)
    failed = _failed(config)
    assert "is 0755" in failed["state folder private"].detail
    assert "doctor --fix" in failed["state folder private"].fix
    assert failed["secrets file"].fix == f"chmod 600 {secrets.resolve()}"
    assert failed["configuration file"].fix == f"chmod go-w {config}"


def test_an_mcp_server_that_runs_without_asking_is_a_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_HOOK_SECRET", "x")
    config = _copy(HARDENED, tmp_path, edit=('action = "ask"', 'action = "allow"'))
    failed = _failed(config)
    assert "run without asking" in failed["tools of files ask first"].detail
    assert 'tool = "files__*" action = "ask"' in failed["tools of files ask first"].fix


def _analyzed(out: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(["systemd-analyze"], code, out, "")


def test_the_unit_figure_is_read_and_an_exposed_unit_fails(tmp_path: Path) -> None:
    unit = tmp_path / "thalos-bot.service"
    unit.write_text("[Service]\n", encoding="utf-8")
    found = "/usr/bin/systemd-analyze"
    ok = systemd_check(
        [unit],
        which=lambda _: found,
        run=lambda _: _analyzed("→ Overall exposure level for thalos-bot.service: 2.1 OK 🙂\n"),
    )
    assert ok.outcome == "ok"
    assert ok.detail == f"{unit}: exposure 2.1 OK (0 is the best, 10 the worst)"
    bad = systemd_check(
        [unit],
        which=lambda _: found,
        run=lambda _: _analyzed("→ Overall exposure level for thalos-bot.service: 9.6 UNSAFE 😨"),
    )
    assert bad.outcome == "fail"
    assert "service install" in bad.fix


def test_without_the_tool_or_the_unit_it_is_a_note_not_a_fail(tmp_path: Path) -> None:
    unit = tmp_path / "thalos-bot.service"
    missing_tool = systemd_check([unit], which=lambda _: None, run=lambda _: _analyzed(""))
    assert (missing_tool.outcome, missing_tool.detail) == (
        "skip",
        "skipped: systemd-analyze is not on this machine",
    )
    no_unit = systemd_check([unit], which=lambda _: "/bin/sa", run=lambda _: _analyzed(""))
    assert no_unit.outcome == "skip"
    assert "not installed" in no_unit.detail


def test_the_telegram_webhook_listener_is_scored_only_in_webhook_mode() -> None:
    from thalos_bot_telegram.config import TelegramConfig
    from thalos_bot_telegram.exposure import telegram_exposure

    polling = TelegramConfig(enabled=True, allowed_user_ids=[1])
    assert telegram_exposure(polling) == []
    webhook = polling.model_copy(
        update={"mode": "webhook", "webhook_url": "https://bot.example.org/telegram"}
    )
    assert [c.outcome for c in telegram_exposure(webhook)] == ["ok"] * 4
    wide = webhook.model_copy(update={"webhook_listen": "0.0.0.0:8081"})
    bind = telegram_exposure(wide)[0]
    assert bind.outcome == "warn"
    assert "127.0.0.1:8081" in bind.fix


def test_the_telegram_webhook_listener_reports_its_bounds() -> None:
    from thalos_bot_telegram.config import TelegramConfig
    from thalos_bot_telegram.exposure import telegram_exposure

    webhook = TelegramConfig(
        enabled=True,
        allowed_user_ids=[1],
        mode="webhook",
        webhook_url="https://bot.example.org/telegram",
        webhook_header_timeout=5,
        webhook_connection_cap=128,
    )
    limits = telegram_exposure(webhook)[3]
    assert limits.outcome == "ok"
    for figure in ("header timeout 5s", "1 MiB", "at most 128 connections", "6000 requests/min"):
        assert figure in limits.detail
    unlimited = telegram_exposure(webhook.model_copy(update={"webhook_rate_limit": 0}))[3]
    assert unlimited.outcome == "warn"
    assert "webhook_rate_limit" in unlimited.fix


def test_the_webhook_connection_cap_leaves_room_above_telegrams_own() -> None:
    from pydantic import ValidationError

    from thalos_bot_telegram.config import TelegramConfig

    with pytest.raises(ValidationError, match="webhook_connection_cap: must be above"):
        TelegramConfig(webhook_max_connections=40, webhook_connection_cap=40)
