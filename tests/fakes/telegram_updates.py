"""The Telegram fake's update queue: ids, offsets, allowed_updates, and the webhook.

Semantics follow the Bot API's getUpdates: update ids increase by one; an update is
confirmed (and forgotten) once getUpdates is called with a higher offset; a negative
offset keeps only the last -offset updates; allowed_updates, when given, is remembered
for later calls, and an empty list means every type except chat_member,
message_reaction and message_reaction_count. Not thread-safe: the fake locks around it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]

_NOT_BY_DEFAULT = frozenset({"chat_member", "message_reaction", "message_reaction_count"})


@dataclass(frozen=True)
class Webhook:
    url: str
    max_connections: int = 40
    allowed_updates: tuple[str, ...] | None = None
    secret_token: str | None = None
    last_error: tuple[int, str] | None = None
    """When and why the last delivery failed (Unix time, Telegram's words)."""


class UpdateQueue:
    def __init__(self, first_update_id: int) -> None:
        self._next_id = first_update_id
        self._updates: list[Json] = []
        self._allowed: frozenset[str] | None = None
        self.acknowledged_offset = 0
        self.webhook: Webhook | None = None

    def push(self, kind: str, payload: Json) -> int:
        update_id = self._next_id
        self._next_id += 1
        self._updates.append({"update_id": update_id, kind: payload})
        return update_id

    def confirm(self, offset: int) -> bool:
        """Apply a getUpdates offset; True if it forgot anything."""
        if offset > 0:
            self.acknowledged_offset = max(self.acknowledged_offset, offset)
            kept = [u for u in self._updates if u["update_id"] >= offset]
        elif offset < 0:
            kept = self._updates[offset:]
            dropped = self._updates[: len(self._updates) - len(kept)]
            if dropped:
                last = dropped[-1]["update_id"]
                self.acknowledged_offset = max(self.acknowledged_offset, last + 1)
        else:
            return False
        changed = len(kept) != len(self._updates)
        self._updates = kept
        return changed

    def set_allowed(self, allowed: Sequence[str] | None) -> None:
        if allowed is not None:
            self._allowed = frozenset(allowed)

    def deliverable(self, limit: int) -> list[Json]:
        """The next updates a getUpdates call would return (without confirming them)."""
        ready = [
            u
            for u in self._updates
            if u["update_id"] >= self.acknowledged_offset and self._wanted(u)
        ]
        return ready[:limit]

    def forget(self, update_id: int) -> None:
        """A webhook delivery of ``update_id`` was answered 2xx: Telegram forgets it."""
        self._updates = [u for u in self._updates if u["update_id"] != update_id]

    def drop_pending(self) -> None:
        self._updates.clear()

    @property
    def pending_count(self) -> int:
        return len(self._updates)

    def _wanted(self, update: Json) -> bool:
        kind = next(key for key in update if key != "update_id")
        if not self._allowed:
            return kind not in _NOT_BY_DEFAULT
        return kind in self._allowed

    def webhook_info(self) -> Json:
        info: Json = {
            "url": self.webhook.url if self.webhook else "",
            "has_custom_certificate": False,
            "pending_update_count": self.pending_count,
        }
        if self.webhook is not None:
            info["max_connections"] = self.webhook.max_connections
            if self.webhook.allowed_updates is not None:
                info["allowed_updates"] = list(self.webhook.allowed_updates)
            if self.webhook.last_error is not None:
                info["last_error_date"], info["last_error_message"] = self.webhook.last_error
        return info
