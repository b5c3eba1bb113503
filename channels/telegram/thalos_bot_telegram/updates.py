"""Fetching a getUpdates batch raw and decoding each update on its own.

python-telegram-bot's ``Bot.get_updates`` decodes the whole batch in one go: a single
update it cannot decode fails the call (so every other update in the batch is lost
with it, and the offset never moves past the bad one), and PTB then logs the raw batch,
message texts included, at CRITICAL. Here the batch comes back as JSON and each update
is decoded separately: a bad one is reported by id, without its content, and skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from telegram import Bot, Update

ALLOWED_UPDATES = ("message", "callback_query")


@dataclass(frozen=True, slots=True)
class Unreadable:
    """An update PTB could not decode (or that is not an update object at all)."""

    update_id: int | None
    error: str
    """The exception's type name (never its text, which may quote the update)."""


@dataclass(frozen=True, slots=True)
class Batch:
    updates: tuple[Update, ...]
    unreadable: tuple[Unreadable, ...]
    next_offset: int | None
    """One past the highest update id seen (readable or not), or None if none had one."""

    @property
    def empty(self) -> bool:
        return not self.updates and not self.unreadable


async def fetch_batch(bot: Bot, offset: int, wait: int, read_timeout: float) -> Batch:
    """One getUpdates round trip. Raises what PTB raises for the call itself
    (:class:`telegram.error.TelegramError`), never for the content of an update.
    ``wait`` is the long-poll timeout; ``read_timeout`` is added to it."""
    data: dict[str, Any] = {"timeout": wait, "allowed_updates": list(ALLOWED_UPDATES)}
    if offset:
        data["offset"] = offset
    # Bot._post is the request path get_updates itself takes (its own connection pool,
    # PTB's error mapping), without get_updates' all-or-nothing decoding.
    result = await bot._post(  # noqa: SLF001
        "getUpdates", data, read_timeout=read_timeout + wait
    )
    return decode_batch(result if isinstance(result, list) else [], bot)


def decode_batch(raw: Sequence[object], bot: Bot | None) -> Batch:
    updates: list[Update] = []
    unreadable: list[Unreadable] = []
    highest: int | None = None
    for item in raw:
        update_id = update_id_of(item)
        if update_id is not None:
            highest = update_id if highest is None else max(highest, update_id)
        decoded = decode_update(item, update_id, bot)
        if isinstance(decoded, Update):
            updates.append(decoded)
        else:
            unreadable.append(decoded)
    return Batch(tuple(updates), tuple(unreadable), None if highest is None else highest + 1)


def decode_update(item: object, update_id: int | None, bot: Bot | None) -> Update | Unreadable:
    if update_id is None or not isinstance(item, dict):
        return Unreadable(update_id, "not an update object")
    try:
        return Update.de_json(item, bot)
    except Exception as exc:  # noqa: BLE001 - any decoding failure is one bad update
        return Unreadable(update_id, type(exc).__name__)


def update_id_of(item: object) -> int | None:
    if not isinstance(item, dict):
        return None
    value = item.get("update_id")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
