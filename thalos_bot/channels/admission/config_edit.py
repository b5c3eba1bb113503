"""Add a person to a channel's allowlist in ``bot.toml``, keeping every comment (what a
transport's ``pair`` command does once the code came back).

The file is edited with tomlkit, which keeps comments, blank lines and key order; the
result is written next to the original and renamed over it (with the original's mode),
so an interrupted write never leaves half a file.
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
    """The section was off (or missing) and pairing turned it on."""


def add_allowed(path: Path, channel: str, key: str, person: int | str) -> Added:
    """Add ``person`` to ``[channels.<channel>] <key>`` (an array of ids, made when
    missing) and turn the channel on."""
    doc = tomlkit.parse(path.read_text(encoding="utf-8"))
    channels: Any = doc.get("channels")
    if channels is None:
        channels = tomlkit.table(is_super_table=True)
        doc["channels"] = channels
    section: Any = channels.get(channel)
    if not isinstance(section, Table):
        section = tomlkit.table()
        channels[channel] = section
    listed = section.get(key)
    if not isinstance(listed, Array):
        listed = tomlkit.array()
        section[key] = listed
    kind = type(person)
    already = person in [kind(value) for value in listed]
    if not already:
        listed.append(person)
    enabled_now = not bool(section.get("enabled", False))
    if enabled_now:
        section["enabled"] = True
    _replace(path, tomlkit.dumps(doc))
    return Added(already_listed=already, enabled_now=enabled_now)


def _replace(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.pairing")
    temporary.write_text(text, encoding="utf-8")
    try:
        temporary.chmod(path.stat().st_mode & 0o7777)
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
