#!/usr/bin/env python3
"""Bootstrap and run thalos-bot from a clean clone with nothing but Python 3.11 and pip.

    python3 dev.py chat --offline   # no key needed: the echo model, in this terminal
    python3 dev.py chat             # create .venv if needed, install, run `thalos-bot chat`
    python3 dev.py test             # lint (ruff), type-check (mypy strict), run the tests
    python3 dev.py setup            # install everything `test` needs, run nothing
    python3 dev.py <args>           # any other `thalos-bot` subcommand: check, run, ...

The virtual environment lives in `.venv/`. Running the bot installs only what running
needs; `test` and `setup` add the development tools (mypy, pytest, ruff, hypothesis)
and every server the tests start for real: Debian's packages (PostgreSQL, Chromium,
HAProxy, libolm, npm, Dovecot, Postfix; as root, else the one apt-get line to run), the
MCP reference server (npm) and Synapse (its own virtualenv, .synapse/).
It is reinstalled only when a pyproject.toml or constraints.txt changes, and a .venv
that already has the development tools keeps them when it is.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".thalos-installed"
CHANNELS = [
    "channels/telegram",
    "channels/web",
    "channels/slack",
    "channels/matrix",
    "channels/discord",
    "channels/signal",
    "channels/email",
]
"""The channel distributions a checkout installs (editable) beside the core."""
INPUTS = ["pyproject.toml", *(f"{c}/pyproject.toml" for c in CHANNELS), "constraints.txt"]
MIN_PYTHON = (3, 11)
RUN, DEV = "run", "dev"
"""What an install holds: ``run`` the bot and its channels; ``dev`` those and the
development tools too."""
DEV_COMMANDS = {"test", "setup"}


def python_problem(version: tuple[int, ...]) -> str | None:
    """Why this interpreter cannot run the bot, in words, before pip's resolver says it
    in its own."""
    if tuple(version[:2]) >= MIN_PYTHON:
        return None
    have = ".".join(str(part) for part in version[:3])
    need = ".".join(str(part) for part in MIN_PYTHON)
    return (
        f"dev.py: thalos-bot needs Python {need}+, and this is Python {have} "
        f"({sys.executable}). Run dev.py with a newer python3, e.g. python{need} dev.py ..."
    )


def install_plan(stamp: str | None, fingerprint: str, wanted: str) -> str | None:
    """Which profile to install, or None when ``.venv`` already serves ``wanted``.

    The stamp is ``"<profile>:<fingerprint>"``; a bare fingerprint (written before
    profiles existed, when every install had the development tools) counts as ``dev``.
    A changed fingerprint reinstalls the larger of the two profiles, so the development
    tools of a .venv that had them stay in step with the constraints.
    """
    if stamp is None:
        return wanted
    profile, _, stamped = stamp.strip().rpartition(":")
    had = profile or DEV
    if stamped == fingerprint and (had == DEV or wanted == RUN):
        return None
    return DEV if DEV in {had, wanted} else RUN


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for name in INPUTS:
        path = ROOT / name
        digest.update(name.encode())
        if path.exists():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _run(*cmd: str | Path) -> None:
    code = subprocess.run([str(c) for c in cmd], check=False, cwd=ROOT).returncode
    if code != 0:
        sys.exit(f"dev.py: {' '.join(str(c) for c in cmd)} failed with exit code {code}")


def ensure_env(wanted: str) -> None:
    if not PY.exists():
        print("dev.py: creating .venv", file=sys.stderr)
        venv.EnvBuilder(with_pip=True).create(VENV)
    fingerprint = _fingerprint()
    profile = install_plan(STAMP.read_text() if STAMP.exists() else None, fingerprint, wanted)
    if profile is None:
        return
    what = "and its development tools " if profile == DEV else ""
    print(f"dev.py: installing thalos-bot {what}into .venv", file=sys.stderr)
    quiet = "-q"
    _run(PY, "-m", "pip", "install", quiet, "--upgrade", "pip>=25.1")
    packages = ["-e", "."]
    for channel in CHANNELS:
        if (ROOT / channel / "pyproject.toml").exists():
            packages += ["-e", f"./{channel}"]
    constraints = ["-c", "constraints.txt"] if (ROOT / "constraints.txt").exists() else []
    groups = ["--group", "dev"] if profile == DEV else []
    _run(PY, "-m", "pip", "install", quiet, *constraints, *packages, *groups)
    STAMP.write_text(f"{profile}:{fingerprint}")


def pytest_workers(extra: list[str], environ: dict[str, str]) -> list[str]:
    """The ``-n`` that runs the tests in parallel (pytest-xdist), unless the arguments
    already choose (``-n 0`` runs them serially); ``THALOS_TEST_WORKERS`` says how many.
    ``loadgroup``: the tests of one ``xdist_group`` (those sharing a costly server) go to
    one worker, the others to whichever worker is free."""
    for arg, after in zip(extra, [*extra[1:], ""], strict=False):
        if arg in {"-n", "--numprocesses"} or arg.startswith(("-n", "--numprocesses=")):
            return []
        if (arg, after) == ("-p", "no:xdist") or arg == "-pno:xdist":
            return []
    return ["-n", environ.get("THALOS_TEST_WORKERS") or "auto", "--dist", "loadgroup"]


def pytest_env(environ: dict[str, str]) -> dict[str, str]:
    """The tests' environment: this one, except that Python keeps its bytecode caches
    (``__pycache__``, ignored by git) even under ``PYTHONDONTWRITEBYTECODE``. Every
    daemon and replica the tests start as a process imports the whole package: without
    the caches each start compiled it again, about 0.8 s of CPU."""
    return {k: v for k, v in environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


SYSTEM: list[tuple[str, Callable[[], bool], list[str]]] = [
    # (what the tests use it for, is it there, the Debian packages that bring it)
    (
        "PostgreSQL (tests/storage, tests/cluster)",
        lambda: any(Path("/usr/lib/postgresql").glob("*/bin/initdb")),
        ["postgresql"],
    ),
    (
        "Chromium (tests/web)",
        lambda: bool(shutil.which("chromium") and shutil.which("chromedriver")),
        ["chromium", "chromium-driver"],
    ),
    (
        "HAProxy (tests/cluster)",
        lambda: bool(shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists()),
        ["haproxy"],
    ),
    (
        "libolm (Matrix encryption, built by pip)",
        lambda: Path("/usr/include/olm/olm.h").exists(),
        ["libolm-dev", "cmake", "g++", "pkg-config"],
    ),
    (
        "Dovecot and Postfix (real IMAP and SMTP servers, tests/email)",
        lambda: bool(Path("/usr/lib/dovecot/lmtp").exists() and Path("/usr/sbin/postfix").exists()),
        ["dovecot-imapd", "dovecot-lmtpd", "postfix"],
    ),
    ("npm (the MCP reference server, tests/interop)", lambda: bool(shutil.which("npm")), ["npm"]),
    (
        "espeak-ng and ffmpeg (the local speech engine, tests/speech)",
        lambda: bool(shutil.which("espeak-ng") and shutil.which("ffmpeg")),
        ["espeak-ng", "ffmpeg"],
    ),
]
"""What the tests start for real, from Debian's packages."""


def system_plan(missing: list[str], *, root: bool, apt: bool) -> list[str] | str:
    """The apt-get command that installs ``missing`` packages, or, when this user cannot
    run it, the one line to run (as a sentence): [] when nothing is missing."""
    if not missing:
        return []
    line = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    if root and apt:
        return line
    how = "sudo " + " ".join(line) if apt else f"install {', '.join(missing)}"
    return f"dev.py: the tests need system packages that are missing; run:\n    {how}"


def ensure_system() -> None:
    """Every server the tests start, so that they skip nothing: Debian's packages (as
    root; otherwise the one line to run, and stop), the MCP reference server from npm,
    and Synapse in its own virtualenv. Each step returns at once when already done."""
    missing = [pkg for what, there, pkgs in SYSTEM if not there() for pkg in pkgs]
    plan = system_plan(
        missing,
        root=hasattr(os, "geteuid") and os.geteuid() == 0,
        apt=bool(shutil.which("apt-get")),
    )
    if isinstance(plan, str):
        sys.exit(plan)
    if plan:
        print(f"dev.py: installing {' '.join(missing)} (apt-get)", file=sys.stderr)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (["apt-get", "update", "-qq"], [*plan[:2], "-qq", *plan[2:]]):
            if subprocess.run(cmd, env=env, check=False).returncode != 0:
                sys.exit(f"dev.py: {' '.join(cmd)} failed")
    interop = ROOT / "tests" / "interop"
    lock = interop / "package-lock.json"
    modules = interop / "node_modules" / ".package-lock.json"
    if lock.exists() and (not modules.exists() or modules.stat().st_mtime < lock.stat().st_mtime):
        print("dev.py: installing the MCP reference server (npm ci)", file=sys.stderr)
        npm = shutil.which("npm") or "npm"
        code = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=interop, check=False
        ).returncode
        if code != 0:
            sys.exit(f"dev.py: npm ci in {interop} failed with exit code {code}")
    _run("bash", ROOT / "tests" / "matrix" / "setup-synapse")


def run_tests(extra: list[str]) -> int:
    steps: list[list[str | Path]] = [
        [BIN / "ruff", "check", "."],
        [BIN / "ruff", "format", "--check", "."],
        [BIN / "mypy"],
        [PY, "-m", "pytest", *pytest_workers(extra, dict(os.environ)), *extra],
    ]
    for step in steps:
        print(
            "dev.py: $",
            " ".join(Path(str(s)).name if i == 0 else str(s) for i, s in enumerate(step)),
            file=sys.stderr,
            flush=True,
        )
        code = subprocess.run(
            [str(s) for s in step], cwd=ROOT, env=pytest_env(dict(os.environ)), check=False
        ).returncode
        if code != 0:
            print(f"dev.py: step failed with exit code {code}", file=sys.stderr)
            return code
    return 0


def main(argv: list[str]) -> int:
    problem = python_problem(sys.version_info[:3])
    if problem is not None:
        print(problem, file=sys.stderr)
        return 1
    if not argv or argv[0] in {"-h", "--help"}:
        print(__doc__)
        return 0
    if argv[0] in DEV_COMMANDS:
        ensure_system()
    ensure_env(DEV if argv[0] in DEV_COMMANDS else RUN)
    if argv[0] == "setup":
        return 0
    if argv[0] != "test":
        exe = BIN / "thalos-bot"
        os.execv(exe, [str(exe), *argv])  # noqa: S606 - replaces this process with the bot
    return run_tests(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
