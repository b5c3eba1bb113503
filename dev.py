#!/usr/bin/env python3
"""Bootstrap and run thalos-bot from a clean clone with nothing but Python 3.11 and pip.

    python3 dev.py chat        # create .venv if needed, install, run `thalos-bot chat`
    python3 dev.py test        # lint (ruff), type-check (mypy strict), run the test suite
    python3 dev.py <args>      # any other `thalos-bot` subcommand: check, run, tools, ...

The virtual environment lives in `.venv/`. It is reinstalled only when a
pyproject.toml or constraints.txt changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".thalos-installed"
INPUTS = ["pyproject.toml", "channels/telegram/pyproject.toml", "constraints.txt"]


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


def ensure_env() -> None:
    if not PY.exists():
        print("dev.py: creating .venv", file=sys.stderr)
        venv.EnvBuilder(with_pip=True).create(VENV)
    fingerprint = _fingerprint()
    if STAMP.exists() and STAMP.read_text() == fingerprint:
        return
    print("dev.py: installing thalos-bot and its development tools into .venv", file=sys.stderr)
    quiet = "-q"
    _run(PY, "-m", "pip", "install", quiet, "--upgrade", "pip>=25.1")
    packages = ["-e", "."]
    if (ROOT / "channels/telegram/pyproject.toml").exists():
        packages += ["-e", "./channels/telegram"]
    constraints = ["-c", "constraints.txt"] if (ROOT / "constraints.txt").exists() else []
    _run(PY, "-m", "pip", "install", quiet, *constraints, *packages, "--group", "dev")
    STAMP.write_text(fingerprint)


def run_tests(extra: list[str]) -> int:
    steps: list[list[str | Path]] = [
        [BIN / "ruff", "check", "."],
        [BIN / "ruff", "format", "--check", "."],
        [BIN / "mypy"],
        [PY, "-m", "pytest", *extra],
    ]
    for step in steps:
        print(
            "dev.py: $",
            " ".join(Path(str(s)).name if i == 0 else str(s) for i, s in enumerate(step)),
            file=sys.stderr,
            flush=True,
        )
        code = subprocess.run([str(s) for s in step], cwd=ROOT, check=False).returncode
        if code != 0:
            print(f"dev.py: step failed with exit code {code}", file=sys.stderr)
            return code
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help"}:
        print(__doc__)
        return 0
    ensure_env()
    if argv[0] == "setup":
        return 0
    if argv[0] != "test":
        exe = BIN / "thalos-bot"
        os.execv(exe, [str(exe), *argv])  # noqa: S606 - replaces this process with the bot
    return run_tests(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
