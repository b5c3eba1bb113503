"""A receiving connection that is opened again after each failure (Signal's event
stream, email's IMAP folder, Matrix's ``/sync``): what the core reads of it (its health,
that it has begun receiving, that it is retrying) and the backoff before the next try,
in one place. A platform client that reconnects by itself (discord.py's gateway) says
only :meth:`Reconnecting.opened` and :meth:`Reconnecting.lost`."""

from __future__ import annotations

import anyio
import structlog

from thalos_bot.channels.health import ChannelHealth
from thalos_bot.channels.pacing.backoff import Backoff

log = structlog.get_logger(__name__)


class Reconnecting:
    """``channel`` prefixes the log events (``<channel>_reconnecting``)."""

    def __init__(self, channel: str, backoff: Backoff | None = None) -> None:
        """``backoff``: the waits of :meth:`failed` (none needed for a client that
        reconnects by itself)."""
        self._reconnected = f"{channel}_reconnected"
        self._reconnecting = f"{channel}_reconnecting"
        self.backoff = backoff if backoff is not None else Backoff(1.0, 60.0)
        self.health = ChannelHealth()
        self.receiving = anyio.Event()
        """Set once the connection first worked (the channel is started)."""
        self.retrying = anyio.Event()
        """Set once it failed (the channel is started and trying again)."""

    def opened(self) -> None:
        """The connection works (again)."""
        if self.backoff.reset():
            log.info(self._reconnected)
        self.health.ok()
        self.receiving.set()

    def lost(self, reason: str) -> None:
        """The connection failed (``reason``: secret-free), and is being opened again."""
        self.health.failed(reason)
        self.retrying.set()

    async def failed(self, reason: str, wait: float | None = None) -> None:
        """The connection failed (``reason``: secret-free): said, then waited out
        (``wait``: as long as the platform asked, at most the backoff's maximum; none, or
        none worth waiting, is the backoff's next delay, so a server asking "0" does not
        make a hot loop)."""
        self.lost(reason)
        delay = self.backoff.next_delay()  # counted either way: the backoff still grows
        if wait is not None and wait > 0:
            delay = min(wait, self.backoff.maximum)
        log.warning(self._reconnecting, reason=reason, in_s=round(delay, 1))
        await anyio.sleep(delay)
