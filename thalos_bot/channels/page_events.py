"""The port for a channel whose pages show a conversation's events, numbered per
conversation in the daemon's store: its SQLite file (:mod:`thalos_bot.storage.web_events`,
kept across a restart), or on replicas the shared store
(:mod:`thalos_bot.cluster.page_events`), so a page may be connected to any replica.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from thalos_bot.storage.web_events import PageEvent

__all__ = ["PageEvent", "SharedPageEvents"]


class SharedPageEvents(Protocol):
    async def started(self) -> None:
        """This process starts serving: forget what a gone process was still showing,
        when no other may be showing it (one process)."""
        ...

    async def append(
        self, conversation: str, kind: str, data: Mapping[str, Any], turn: str | None, keep: int
    ) -> int:
        """Store an event of ``conversation`` for every replica; its number there."""
        ...

    async def listen(self, heard: Callable[[str | None], None]) -> None:
        """Call ``heard`` with the conversation of each event any replica writes, as
        it commits, for ever; with None each time listening (again: what was written
        meanwhile was not heard). A store out of reach is tried again here, never
        raised."""
        ...

    async def after(self, marks: Mapping[str, int]) -> list[PageEvent]:
        """Each conversation's events after the number ``marks`` gives it, in order."""
        ...

    async def keep_media(
        self, conversation: str, key: str, media_type: str, data: bytes, keep: int
    ) -> None:
        """Store a file a page shows (a tool's image, a voice clip) for every replica."""
        ...

    async def media(self, conversation: str, key: str) -> tuple[str, bytes] | None:
        """A stored file of ``conversation``; None when unknown or another's."""
        ...
