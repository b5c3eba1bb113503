"""Add a Matrix user to ``allowed_users`` in ``bot.toml``, keeping every comment.

tomlkit keeps comments, blank lines and key order; the result is written next to the
original and renamed over it, so an interrupted write never leaves half a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Array, Table


@dataclass(frozen=True, slots=True)
class Added:
    already_listed: bool
    enabled_now: bool


def add_allowed_user(path: Path, user_id: str) -> Added:
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    channels: Any = doc.get("channels")
    if channels is None:
        channels = tomlkit.table(is_super_table=True)
        doc["channels"] = channels
    section: Any = channels.get("matrix")
    if not isinstance(section, Table):
        section = tomlkit.table()
        channels["matrix"] = section
    users = section.get("allowed_users")
    if not isinstance(users, Array):
        users = tomlkit.array()
        section["allowed_users"] = users
    already = user_id in [str(value) for value in users]
    if not already:
        users.append(user_id)
    enabled_now = not bool(section.get("enabled", False))
    if enabled_now:
        section["enabled"] = True
    temporary = path.with_name(f".{path.name}.pairing")
    temporary.write_text(tomlkit.dumps(doc), encoding="utf-8")
    try:
        temporary.chmod(path.stat().st_mode & 0o7777)
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return Added(already_listed=already, enabled_now=enabled_now)
