"""``dev.py``: the Python check comes first, and running the bot installs only what
running needs (the development tools come with ``test`` and ``setup``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev_script", ROOT / "dev.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_old_python_is_named_before_anything_is_installed(tmp_path: Path) -> None:
    # dev.py run as a script by an interpreter that reports 3.10: it must stop with the
    # version it needs, before it creates a .venv or calls pip.
    copy = tmp_path / "dev.py"
    copy.write_text((ROOT / "dev.py").read_text())
    fake_old = (
        "import runpy, sys\n"
        "sys.version_info = (3, 10, 12, 'final', 0)\n"
        f"sys.argv = [{str(copy)!r}, 'chat']\n"
        f"runpy.run_path({str(copy)!r}, run_name='__main__')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", fake_old], capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    assert "needs Python 3.11+" in result.stderr
    assert "3.10.12" in result.stderr
    assert not (tmp_path / ".venv").exists()


def test_this_python_passes_the_check() -> None:
    assert _dev().python_problem(tuple(sys.version_info)) is None


def test_running_installs_no_development_tools() -> None:
    dev = _dev()
    assert dev.install_plan(None, "f1", dev.RUN) == dev.RUN
    assert dev.install_plan(None, "f1", dev.DEV) == dev.DEV


def test_an_install_for_running_is_topped_up_by_test() -> None:
    dev = _dev()
    assert dev.install_plan("run:f1", "f1", dev.RUN) is None
    assert dev.install_plan("run:f1", "f1", dev.DEV) == dev.DEV
    assert dev.install_plan("dev:f1", "f1", dev.RUN) is None
    assert dev.install_plan("dev:f1", "f1", dev.DEV) is None


def test_a_changed_fingerprint_keeps_the_tools_a_venv_had() -> None:
    dev = _dev()
    assert dev.install_plan("dev:f1", "f2", dev.RUN) == dev.DEV
    assert dev.install_plan("run:f1", "f2", dev.RUN) == dev.RUN
    # A stamp from before profiles (a bare fingerprint) was a full install.
    assert dev.install_plan("f1", "f1", dev.DEV) is None
    assert dev.install_plan("f1", "f2", dev.RUN) == dev.DEV


def test_the_tests_run_in_parallel_unless_the_arguments_choose() -> None:
    workers = _dev().pytest_workers
    assert workers([], {}) == ["-n", "auto", "--dist", "loadgroup"]
    assert workers(["-k", "pump"], {"THALOS_TEST_WORKERS": "3"})[:2] == ["-n", "3"]
    for chosen in (["-n", "0"], ["-n0"], ["--numprocesses=2"], ["-p", "no:xdist"]):
        assert workers(["-x", *chosen], {}) == [], chosen
    assert workers(["-p", "anyio"], {})[:2] == ["-n", "auto"]


def test_the_tests_keep_their_bytecode_caches_whatever_the_environment_says() -> None:
    env = _dev().pytest_env({"PYTHONDONTWRITEBYTECODE": "1", "CI": "true", "PATH": "/bin"})
    assert env == {"CI": "true", "PATH": "/bin"}


def test_the_system_packages_are_installed_as_root_or_named_in_one_line() -> None:
    dev = _dev()
    assert dev.system_plan([], root=False, apt=True) == []
    assert dev.system_plan(["postgresql", "haproxy"], root=True, apt=True) == [
        "apt-get",
        "install",
        "-y",
        "--no-install-recommends",
        "postgresql",
        "haproxy",
    ]
    told = dev.system_plan(["postgresql", "haproxy"], root=False, apt=True)
    assert isinstance(told, str)
    assert "sudo apt-get install -y --no-install-recommends postgresql haproxy" in told
    elsewhere = dev.system_plan(["npm"], root=True, apt=False)
    assert isinstance(elsewhere, str)
    assert "install npm" in elsewhere


def test_every_server_the_tests_start_is_checked_on_this_machine() -> None:
    # dev.py setup has run here (CI, or by hand): each check must see its part, or the
    # check itself is wrong and a fresh machine would skip or reinstall it.
    dev = _dev()
    assert [what for what, there, _ in dev.SYSTEM if not there()] == []
