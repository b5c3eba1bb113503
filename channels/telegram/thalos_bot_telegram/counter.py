"""Message-id counters, as Telegram keeps them: what is known of the ids each has given out.

Telegram numbers messages per *account*: every message in a private chat or a basic
group, the user's and the bot's alike, whichever chat it is in, takes the next number
from the bot account's one counter. Only a supergroup (or a channel) has a counter of
its own. So in a private chat the ids go up, but skip every id another chat took
meanwhile.

A :class:`Counter` holds what the adapter knows of one counter: the highest id known to
be given out (:attr:`Counter.bound`, kept across restarts: see
:mod:`thalos_bot.channels.delivery.markbook`), which chat recent ids belong to (from the updates
received, whether admitted or not, and from the bot's own sends), and the sends that
are under way or in doubt (:class:`Pending`), in the order they began. The check of a
send in doubt (:mod:`thalos_bot_telegram.uncertain`) reads all three.
``catch_up``: the account's (:meth:`thalos_bot_telegram.poller.Poller.caught_up`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

CatchUp = Callable[[], Awaitable[bool]]

KEPT_OWNERS = 4096
"""Ids whose chat is remembered (the newest; a check never needs older ones, since its
floor is the bound when the send began)."""

SUPERGROUP_BELOW = -1_000_000_000_000
"""Telegram gives supergroups and channels ids below this (``-100`` then the id); basic
groups' ids are negative and above it. Used only for a chat no update has named yet."""


@dataclass(slots=True, eq=False)
class Pending:
    """A send (sendMessage, sendPhoto) under way, or in doubt, in a counter."""

    chat_id: int
    started: int
    """The counter's clock when the request went out."""
    doubt_since: int | None = None
    """The counter's clock when its outcome turned out unknown (None: still under way)."""
    stuck_at: int | None = None
    """In doubt, the id above the bound its chat answered "not found" for."""
    later_id: int | None = None
    """In doubt: the lowest id known to be given out after the doubt arose (so above
    this send's id, if it arrived): a send begun later, or a message heard of once the
    updates held after the doubt arose were fetched (:attr:`caught_up`)."""
    caught_up: bool = False
    """In doubt: every update Telegram held after the doubt arose has been noted, so any
    message heard of from now on was posted after it."""


class Counter:
    """One counter: the bot account's (``shared``) or a supergroup's."""

    def __init__(self, *, shared: bool, bound: int = 0, catch_up: CatchUp | None = None) -> None:
        self.shared = shared
        self.bound = bound
        """The highest id known to have been given out (0: none known)."""
        self.catch_up = catch_up
        self.on_raised: Callable[[int], None] | None = None
        """Called with the new bound whenever it rises (to keep it across restarts)."""
        self._owners: dict[int, int] = {}
        self._pending: list[Pending] = []
        self._resumed: dict[int, list[Pending]] = {}
        self._clock = 0
        self._changed: anyio.Event | None = None

    # -- what is known -----------------------------------------------------------------

    def saw(self, chat_id: int, message_id: int) -> None:
        """A message with this id exists, in that chat."""
        if message_id <= 0:
            return
        self._owners[message_id] = chat_id
        if len(self._owners) > 2 * KEPT_OWNERS:
            newest = sorted(self._owners)[-KEPT_OWNERS:]
            self._owners = {m: self._owners[m] for m in newest}
        self.raise_bound(message_id)

    def heard(self, chat_id: int, message_id: int) -> None:
        """An update told of a message with this id, in that chat."""
        for pending in self._pending:
            if pending.caught_up and message_id not in self._owners:
                _lower(pending, message_id)
        self.saw(chat_id, message_id)

    def raise_bound(self, message_id: int) -> None:
        if message_id > self.bound:
            self.bound = message_id
            if self.on_raised is not None:
                self.on_raised(message_id)
            self._wake()

    def owner(self, message_id: int) -> int | None:
        """The chat the message with this id is known to be in, or None."""
        return self._owners.get(message_id)

    # -- sends -------------------------------------------------------------------------

    def begin(self, chat_id: int) -> Pending:
        """A send goes out now."""
        self._clock += 1
        pending = Pending(chat_id, self._clock)
        self._pending.append(pending)
        return pending

    def resumed(self, chat_id: int) -> None:
        """An earlier process left a send in doubt in the chat (an outbox row taken up
        again): it counts as begun before anything this process began."""
        self._clock += 1
        pending = Pending(chat_id, 0, doubt_since=self._clock)
        self._pending.append(pending)
        self._resumed.setdefault(chat_id, []).append(pending)
        self._wake()

    def take_resumed(self, chat_id: int) -> Pending:
        """The chat's oldest send left in doubt by an earlier process, now checked."""
        if not self._resumed.get(chat_id):
            self.resumed(chat_id)
        return self._resumed[chat_id].pop(0)

    def sent(self, pending: Pending, message_id: int) -> None:
        """The send arrived, with this id (it no longer counts as pending)."""
        self._drop(pending)
        for other in self._pending:
            since = other.doubt_since
            if since is not None and since < pending.started:
                _lower(other, message_id)
        self.saw(pending.chat_id, message_id)
        self._wake()

    def not_sent(self, pending: Pending) -> None:
        """The send did not arrive (refused, never made, or found missing)."""
        self._drop(pending)
        self._wake()

    def doubt(self, pending: Pending) -> None:
        """The send's outcome is unknown: it stays pending until its check ends."""
        self._clock += 1
        pending.doubt_since = self._clock
        self._wake()

    def stuck(self, pending: Pending, message_id: int) -> None:
        pending.stuck_at = message_id
        self._wake()

    def blockers(self, pending: Pending) -> list[Pending]:
        """The other sends begun before ``pending``'s doubt arose, still unresolved: any
        of them may hold an id below ``pending``'s, unknown until it is resolved."""
        since = pending.doubt_since
        assert since is not None
        return [p for p in self._pending if p is not pending and p.started < since]

    async def changed(self) -> None:
        """Wait until something here changes (a send resolves, the bound rises, a check
        gets stuck)."""
        if self._changed is None:
            self._changed = anyio.Event()
        await self._changed.wait()

    def _drop(self, pending: Pending) -> None:
        if pending in self._pending:
            self._pending.remove(pending)

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None


def _lower(pending: Pending, message_id: int) -> None:
    if pending.later_id is None or message_id < pending.later_id:
        pending.later_id = message_id


def shared_counter(chat_id: int, chat_type: str | None) -> bool:
    """Whether the chat draws its ids from the bot account's counter: a private chat or
    a basic group does, a supergroup or a channel does not (``chat_type`` None: not
    known yet, judged by the id as Telegram assigns them)."""
    if chat_type is not None:
        return chat_type in {"private", "group"}
    return chat_id > SUPERGROUP_BELOW
