"""``thalos-bot service install`` / ``uninstall`` against a temporary root: the files it
writes, the unit it verifies with ``systemd-analyze`` (where installed), and an
uninstall that removes what it wrote and keeps what the operator changed."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.channels.cli_process import command, run_piped
from thalos_bot.config.loader import load_settings
from thalos_bot.service.install import (
    MANIFEST,
    InstallError,
    hidden_by_protect_home,
    install,
    uninstall,
)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
ANALYZE = shutil.which("systemd-analyze")
HIDDEN = hidden_by_protect_home([Path(sys.executable), Path(sys.prefix), Path(sys.base_prefix)])
# This machine's Python may live under /root or /home (pyenv): then install needs
# --allow-home, and the refusal itself is tested below.
ALLOW = ["--allow-home"] if HIDDEN is not None else []


def _install(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    root = tmp_path / "root"
    return run_piped(["service", "install", "--root", str(root), *ALLOW, *extra], "", cwd=tmp_path)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _directive(unit: str, name: str) -> str:
    match = re.search(rf"^{name}=(.*)$", unit, re.MULTILINE)
    assert match is not None, name
    return match.group(1)


def test_install_writes_the_config_folder_and_a_verified_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _install(tmp_path)
    assert result.returncode == 0, result.stderr
    etc = tmp_path / "root" / "etc" / "thalos-bot"
    unit_path = tmp_path / "root" / "etc" / "systemd" / "system" / "thalos-bot.service"
    assert _mode(etc / "thalos-bot.env") == 0o600
    secrets = (etc / "thalos-bot.env").read_text()
    assert "ANTHROPIC_API_KEY=\n" in secrets
    assert "wrote the sample, every channel off" in result.stdout
    config = tomllib.loads((etc / "bot.toml").read_text())
    assert config["channels"]["console"]["enabled"] is False
    # The service's folder, named: root running `web pair` or `status` by hand (no
    # $STATE_DIRECTORY there) uses the daemon's folder, not root's own.
    assert config["state_dir"] == "/var/lib/thalos-bot"
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    monkeypatch.delenv("THALOS_BOT_STATE_DIR", raising=False)
    loaded = load_settings(etc / "bot.toml")
    assert loaded.state_dir == Path("/var/lib/thalos-bot").resolve()
    unit = unit_path.read_text()
    exec_start = _directive(unit, "ExecStart").split()
    assert exec_start[: len(command())] == command(), "ExecStart is the running program"
    assert exec_start[len(command()) :] == ["run", "--config", "/etc/thalos-bot/bot.toml"]
    assert _directive(unit, "EnvironmentFile") == "/etc/thalos-bot/thalos-bot.env"
    assert _directive(unit, "ProtectHome") == ("read-only" if HIDDEN else "yes")
    documentation = urlparse(_directive(unit, "Documentation"))
    assert documentation.scheme == "file"
    assert Path(documentation.path).is_file(), "the unit's Documentation= exists"
    if ANALYZE is not None:
        assert f"systemd-analyze verify {unit_path}: fine" in result.stdout
        verified = subprocess.run(
            [ANALYZE, "verify", str(unit_path)], capture_output=True, text=True, check=False
        )
        assert verified.returncode == 0, verified.stderr
    assert "systemctl daemon-reload" in result.stdout, "printed, not run, under --root"
    assert "systemctl enable --now thalos-bot" in result.stdout


@pytest.mark.skipif(HIDDEN is None, reason="this Python is not under /home or /root")
def test_an_interpreter_hidden_by_protect_home_is_refused(tmp_path: Path) -> None:
    result = run_piped(["service", "install", "--root", str(tmp_path / "root")], "", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"the program runs from {HIDDEN}, which the unit's ProtectHome=yes hides" in (
        result.stderr
    )
    assert "--allow-home" in result.stderr
    assert not (tmp_path / "root").exists(), "nothing is written when it refuses"


def test_protect_home_knows_where_homes_are() -> None:
    assert hidden_by_protect_home([Path("/usr/bin/python3")]) is None
    assert hidden_by_protect_home([Path("/home/ana/.pyenv/versions/3.12/bin/python")]) == Path(
        "/home/ana/.pyenv/versions/3.12/bin/python"
    )
    assert hidden_by_protect_home([Path("/opt/x"), Path("/root/.local/share/uv/python")])


def test_uninstall_removes_what_install_wrote_and_keeps_what_changed(tmp_path: Path) -> None:
    assert _install(tmp_path).returncode == 0
    etc = tmp_path / "root" / "etc" / "thalos-bot"
    unit = tmp_path / "root" / "etc" / "systemd" / "system" / "thalos-bot.service"
    (etc / "thalos-bot.env").write_text("ANTHROPIC_API_KEY=sk-ant-edited\n")
    again = _install(tmp_path)
    assert again.returncode == 0, again.stderr
    assert f"kept {etc / 'bot.toml'} (it exists)" in again.stdout
    assert (etc / "thalos-bot.env").read_text() == "ANTHROPIC_API_KEY=sk-ant-edited\n"
    result = run_piped(["service", "uninstall", "--root", str(tmp_path / "root")], "", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not unit.exists()
    assert not (etc / "bot.toml").exists(), "the first install's file is removed too"
    assert (etc / "thalos-bot.env").exists(), "an edited secrets file is kept"
    assert f"kept {etc / 'thalos-bot.env'} (changed since install)" in result.stdout
    nothing = run_piped(
        ["service", "uninstall", "--root", str(tmp_path / "root")], "", cwd=tmp_path
    )
    assert nothing.returncode == 2
    assert "no install record" in nothing.stderr


def test_a_user_service_has_no_system_only_directives(tmp_path: Path) -> None:
    result = _install(tmp_path, "--user")
    assert result.returncode == 0, result.stderr
    [unit_path] = (tmp_path / "root").rglob("thalos-bot.service")
    assert unit_path.parent.name == "user"
    unit = unit_path.read_text()
    for gone in ("DynamicUser=", "PrivateUsers=", "CapabilityBoundingSet=", "WorkingDirectory="):
        assert gone not in unit
    assert "WantedBy=default.target" in unit
    assert _directive(unit, "ProtectHome") == "no"
    assert "systemctl --user enable --now thalos-bot" in result.stdout


def test_the_deploy_readme_check_recipe_works_on_its_env_example(tmp_path: Path) -> None:
    readme = (ROOT / "deploy" / "README.md").read_text()
    match = re.search(r"^sudo sh -c '(.*)'$", readme, re.MULTILINE)
    assert match is not None
    script = match.group(1)
    script = script.replace(
        "/etc/thalos-bot/thalos-bot.env", str(ROOT / "deploy/thalos-bot.env.example")
    )
    script = script.replace("/opt/thalos-bot/venv/bin/thalos-bot", " ".join(command()))
    script = script.replace("doctor", "check").replace(
        "/etc/thalos-bot/bot.toml", str(ROOT / "bot.toml")
    )
    result = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "valid" in result.stdout


def _ran(command: list[str]) -> subprocess.CompletedProcess[str]:
    """systemd-analyze and systemctl as if they agreed (the unit is checked above)."""
    return subprocess.CompletedProcess(command, 0, "", "")


def _install_in(root: Path, *, umask: int) -> None:
    old = os.umask(umask)
    try:
        install(
            user=False, root=root, allow_home=True, run=_ran, command=["/opt/tb/bin/thalos-bot"]
        )
    finally:
        os.umask(old)


def test_install_under_a_permissive_umask_leaves_nothing_writable_by_others(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    _install_in(root, umask=0)
    etc = root / "etc" / "thalos-bot"
    unit = root / "etc" / "systemd" / "system" / "thalos-bot.service"
    assert _mode(etc) == 0o755
    assert _mode(etc / MANIFEST) == 0o600
    assert _mode(etc / "bot.toml") == 0o644
    assert _mode(etc / "thalos-bot.env") == 0o600
    assert _mode(unit) == 0o644
    for folder in (root / "etc", root / "etc" / "systemd", unit.parent):
        assert not _mode(folder) & 0o022, f"{folder} is {_mode(folder):04o}"


def test_uninstall_deletes_only_what_install_writes(tmp_path: Path) -> None:
    """A path listed in the record that no install writes is kept, whatever its checksum
    (a record someone else edited must not make root delete their choice of file)."""
    root = tmp_path / "root"
    _install_in(root, umask=0o022)
    victim = tmp_path / "precious.txt"
    victim.write_text("keep me")
    manifest = root / "etc" / "thalos-bot" / MANIFEST
    record = json.loads(manifest.read_text())
    record["files"][str(victim)] = hashlib.sha256(b"keep me").hexdigest()
    manifest.write_text(json.dumps(record))
    report = uninstall(user=False, root=root)
    assert victim.read_text() == "keep me"
    assert any(str(victim) in line for line in report.kept)
    assert not (root / "etc" / "thalos-bot" / "bot.toml").exists(), "its own files go"


def test_uninstall_refuses_a_record_others_could_write(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _install_in(root, umask=0o022)
    manifest = root / "etc" / "thalos-bot" / MANIFEST
    manifest.chmod(0o666)
    with pytest.raises(InstallError, match="could have been written by another user"):
        uninstall(user=False, root=root)
    assert (root / "etc" / "thalos-bot" / "bot.toml").exists(), "nothing removed"


def _fake_secret(prefix: str) -> str:
    """Built at run time: no real (or real-looking) secret is ever in a fixture."""
    return f"{prefix}{hashlib.sha256(os.urandom(8)).hexdigest()[:24]}"


def test_install_carries_over_the_working_setup_and_its_secrets(tmp_path: Path) -> None:
    here = tmp_path / "mine"
    assert (
        run_piped(
            ["init", str(here), "--telegram", "--model", "claude-sonnet-5-5"], "", cwd=tmp_path
        ).returncode
        == 0
    )
    toml = (here / "bot.toml").read_text()
    toml = toml.replace(
        "enabled = false # `thalos-bot telegram pair` turns it on", "enabled = true"
    )
    toml = toml.replace("allowed_user_ids = [] #", "allowed_user_ids = [4242] #")
    (here / "bot.toml").write_text(toml)
    key, token = _fake_secret("sk-ant-"), f"123456:{_fake_secret('')}"
    (here / "thalos-bot.env").write_text(f"ANTHROPIC_API_KEY={key}\n")
    (here / "thalos-bot.env").chmod(0o600)
    root = tmp_path / "root"
    result = run_piped(
        ["service", "install", "--root", str(root), *ALLOW],
        "",
        cwd=here,
        env={"TELEGRAM_BOT_TOKEN": token},
    )
    assert result.returncode == 0, result.stderr
    etc = root / "etc" / "thalos-bot"
    config = tomllib.loads((etc / "bot.toml").read_text())
    assert config["channels"]["telegram"]["enabled"] is True
    assert config["channels"]["telegram"]["allowed_user_ids"] == [4242]
    assert config["channels"]["console"]["enabled"] is False
    assert config["state_dir"] == "/var/lib/thalos-bot"
    secrets = (etc / "thalos-bot.env").read_text()
    assert f"ANTHROPIC_API_KEY={key}\n" in secrets
    assert f"TELEGRAM_BOT_TOKEN={token}\n" in secrets
    assert _mode(etc / "thalos-bot.env") == 0o600
    out = result.stdout
    assert "used bot.toml: the console turned off, state in /var/lib/thalos-bot" in out
    assert "secrets from thalos-bot.env: ANTHROPIC_API_KEY" in out
    assert "secrets from this shell's environment: TELEGRAM_BOT_TOKEN" in out
    for secret in (key, token):
        assert secret not in out
        assert secret not in result.stderr
    assert "sudoedit /etc/thalos-bot/thalos-bot.env" not in out, "nothing is missing"


def test_install_names_the_secrets_still_missing(tmp_path: Path) -> None:
    here = tmp_path / "mine"
    assert (
        run_piped(["init", str(here), "--model", "claude-sonnet-5-5"], "", cwd=tmp_path).returncode
        == 0
    )
    result = run_piped(
        ["service", "install", "--root", str(tmp_path / "root"), *ALLOW], "", cwd=here
    )
    assert result.returncode == 0, result.stderr
    assert "sudoedit /etc/thalos-bot/thalos-bot.env   # ANTHROPIC_API_KEY" in result.stdout


def _no_systemctl(words: list[str]) -> subprocess.CompletedProcess[str]:
    raise AssertionError(f"nothing may run before the refusal: {words}")


def test_a_program_under_tmp_is_refused_as_private_tmp_hides_it(tmp_path: Path) -> None:
    from thalos_bot.service.install import hidden_by_private_tmp

    assert (
        hidden_by_private_tmp([Path("/tmp/venv/bin/thalos-bot")])
        == Path("/tmp/venv/bin/thalos-bot").resolve()
    )
    assert hidden_by_private_tmp([Path("/opt/thalos-bot/venv/bin/thalos-bot")]) is None
    with pytest.raises(InstallError, match="PrivateTmp=yes hides"):
        install(user=True, run=_no_systemctl, command=["/tmp/venv/bin/thalos-bot"])
    # Packaging into a root (DESTDIR): said, not refused.
    packaged = install(
        user=False,
        root=tmp_path / "root",
        allow_home=True,
        command=["/tmp/venv/bin/thalos-bot"],
        run=lambda words: subprocess.CompletedProcess(words, 0, "", ""),
    )
    assert any("PrivateTmp=yes hides" in warning for warning in packaged.warnings)


def test_a_systemctl_that_fails_is_reported_with_its_reason_not_as_run() -> None:
    from thalos_bot.service.install import Report, _systemctl

    def failing(words: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(words, 1, "", "Failed to connect to bus: No such file\n")

    report = Report()
    assert not _systemctl(failing, ["systemctl", "daemon-reload"], report)
    assert report.done == []
    [warning] = report.warnings
    assert warning == (
        "systemctl daemon-reload failed: Failed to connect to bus: No such file; run it "
        "yourself once that is mended"
    )
