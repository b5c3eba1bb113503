"""The optional port for a channel whose pages may be connected to any replica: their
events in the shared store, numbered per conversation
(:mod:`thalos_bot.cluster.page_events`). None (one process): events stay in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from thalos_bot.cluster.page_events import PageEvent

__all__ = ["PageEvent", "SharedPageEvents"]


class SharedPageEvents(Protocol):
    async def append(
        self, conversation: str, kind: str, data: Mapping[str, Any], turn: str | None, keep: int
    ) -> int:
        """Store an event of ``conversation`` for every replica; its number there."""
        ...

    async def listen(self, heard: Callable[[str | None], None]) -> None:
        """Call ``heard`` with the conversation of each event any replica writes, as
        it commits, for ever; with None once listening. Raises when it cannot listen
        (the caller tries again)."""
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
