"""``uv.lock`` installs the versions CI tests with: every package in ``constraints.txt``
is locked at the same version (``uv sync`` and ``dev.py`` agree)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _name(raw: str) -> str:
    return raw.lower().replace("_", "-").replace(".", "-")


def test_the_lock_file_pins_the_constrained_versions() -> None:
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    locked: dict[str, set[str]] = {}
    for package in lock["package"]:
        if "version" in package:
            locked.setdefault(_name(package["name"]), set()).add(package["version"])
    pinned = {}
    for raw in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pinned[_name(name)] = version
    differ = {
        name: (version, sorted(locked.get(name, set())))
        for name, version in pinned.items()
        if locked.get(name) != {version}
    }
    assert differ == {}, "uv.lock and constraints.txt disagree (regenerate with uv lock -P)"
