"""The shipped systemd unit: it verifies, and its exposure stays at most 2.0 ("OK")."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from thalos_bot.channels import ports

UNIT = Path(__file__).parents[2] / "deploy" / "thalos-bot.service"
ANALYZE = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")


def _testable_copy(tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at an executable that exists on this machine."""
    text = UNIT.read_text()
    text = re.sub(r"^ExecStart=\S+", f"ExecStart={sys.executable}", text, flags=re.MULTILINE)
    copy = tmp_path / "thalos-bot.service"
    copy.write_text(text)
    return copy


def test_unit_declares_what_the_daemon_relies_on() -> None:
    text = UNIT.read_text()
    for line in (
        "Type=notify",
        "Restart=on-failure",
        "DynamicUser=yes",
        "StateDirectory=thalos-bot",
        "EnvironmentFile=/etc/thalos-bot/thalos-bot.env",
        "ProtectSystem=strict",
        "CapabilityBoundingSet=",
        "NoNewPrivileges=yes",
        "SystemCallFilter=@system-service",
    ):
        assert re.search(rf"^{re.escape(line)}$", text, re.MULTILINE), line
    assert re.search(r"^WatchdogSec=\d+s$", text, re.MULTILINE)


def test_no_exit_code_a_restart_cannot_help_is_restarted_into() -> None:
    """Every exit code the kit defines says a restart cannot help: the unit lists each."""
    codes = {v for k, v in vars(ports).items() if k.startswith("EXIT_") and isinstance(v, int)}
    listed = re.search(r"^RestartPreventExitStatus=([\d ]+)$", UNIT.read_text(), re.MULTILINE)
    assert listed is not None
    assert {int(code) for code in listed.group(1).split()} == codes


@needs_systemd
def test_systemd_analyze_verify_passes(tmp_path: Path) -> None:
    assert ANALYZE is not None
    result = subprocess.run(
        [ANALYZE, "verify", str(_testable_copy(tmp_path))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


@needs_systemd
def test_exposure_is_ok(tmp_path: Path) -> None:
    assert ANALYZE is not None
    result = subprocess.run(
        [ANALYZE, "security", "--offline=true", str(_testable_copy(tmp_path))],
        capture_output=True,
        text=True,
        check=False,
    )
    match = re.search(r"Overall exposure level for \S+: ([\d.]+)", result.stdout)
    if match is None:
        pytest.skip(f"this systemd-analyze cannot score units offline: {result.stderr.strip()}")
    assert float(match.group(1)) <= 2.0, result.stdout
