"""The verifications waiting for the operator, in a private file of the state folder
(``matrix/sas-<user>.json``, 0600): the daemon adds one when its emoji are shown,
``thalos-bot matrix verify`` shows them and marks the one the operator confirms, and
the daemon goes on with it at its next sync. Every function blocks (a worker thread)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from thalos_bot.channels.kept import read_json
from thalos_bot.channels.kept import write_private as _write
from thalos_bot_matrix.state import _safe, folder


def path(state_dir: Path, user_id: str) -> Path:
    return folder(state_dir) / f"sas-{_safe(user_id)}.json"


def load(file: Path) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in read_json(file).items() if isinstance(v, dict)}


def add(file: Path, txn: str, user: str, device: str, emoji: str) -> None:
    data = load(file)
    data[txn] = {"user": user, "device": device, "emoji": emoji, "confirmed": False}
    _write(file, data)


def confirm(file: Path, txn: str) -> None:
    data = load(file)
    if txn in data:
        data[txn]["confirmed"] = True
        _write(file, data)


def confirmed(file: Path) -> list[str]:
    return [txn for txn, item in load(file).items() if item.get("confirmed") is True]


def remove(file: Path, txn: str) -> None:
    data = load(file)
    if data.pop(txn, None) is not None:
        _write(file, data)
