"""The ids of the last few thousand messages a channel admitted (an LRU set): a
platform that delivers an event again (a reconnect, a replay) starts no second turn."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Iterator

SEEN_BOUND = 4096


class Seen:
    def __init__(self, bound: int = SEEN_BOUND, ids: Iterable[Hashable] = ()) -> None:
        """``ids``: those a channel kept from its last process, oldest first (the newest
        ``bound`` of them are kept)."""
        self._ids: OrderedDict[Hashable, None] = OrderedDict.fromkeys(list(ids)[-bound:])
        self._bound = bound

    def first_time(self, event_id: Hashable) -> bool:
        if event_id in self._ids:
            return False
        self._ids[event_id] = None
        while len(self._ids) > self._bound:
            self._ids.popitem(last=False)
        return True

    def __contains__(self, event_id: Hashable) -> bool:
        return event_id in self._ids

    def __iter__(self) -> Iterator[Hashable]:
        """Oldest first, as a channel keeps them for its next process."""
        return iter(self._ids)
