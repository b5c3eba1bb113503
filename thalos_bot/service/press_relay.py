"""One channel's approval presses among replicas, running: the presses this replica's
sides relay (:class:`~thalos_bot.channels.approvals.relay.Presses`) are written to the
store in the order pressed (:class:`~thalos_bot.channels.approvals.relay.PressLine`,
:class:`~thalos_bot.cluster.stored_presses.StoredPresses`), and the ones every replica
writes are handed back to them: as their ``NOTIFY`` is heard, and read again from the
store when the LISTEN connection is back and every :data:`PRESSES_AGAIN_EVERY` seconds.

Each ``Asking`` of the channel applies them in order, and its seats decide who may
answer: a press it refuses changes nothing, and the next one still counts.

Two users: a connection channel whose turns run on any replica
(:mod:`thalos_bot.service.anywhere`, which hears the NOTIFY on its inbox drain's
connection), and a channel whose listener every replica serves, so an answer may reach
a replica that did not ask (the web page: it LISTENs on a connection of its own here).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import psycopg
import structlog

from thalos_bot.channels.approvals.relay import RETRY_EVERY, Press, Presses, PressLine
from thalos_bot.cluster.stored_presses import StoredPresses
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.listener import listen_for_ever

log = structlog.get_logger(__name__)

PRESSES_FLUSH_S = 5.0
"""How long a stop lets the presses relayed and not written yet be tried."""
PRESSES_AGAIN_EVERY = 10.0
"""Seconds between two reads of the presses kept in the store (a notification missed
without the LISTEN connection dropping; a drop reads them as it is made again)."""


def presses_channel(channel_id: str) -> str:
    """Where ``channel_id``'s relayed approval presses are announced."""
    return f"thalos_press_{channel_id}"


class PressRelay:
    """``presses``' presses through the store; ``within``: the approval timeout (a
    press the store refuses is written again until then, in order)."""

    def __init__(self, db: PgDatabase, presses: Presses, *, within: float) -> None:
        self.presses = presses
        self.channel_id = presses.channel
        self.notify = presses_channel(self.channel_id)
        """The NOTIFY channel the presses are announced on."""
        self.stored = StoredPresses(db, self.channel_id, self.notify, within=within)
        self.line = PressLine(self._write, self.channel_id, within=within)
        self.listening = anyio.Event()
        """Set once :meth:`running`'s own LISTEN connection is first made."""

    @asynccontextmanager
    async def running(self, listen: str | None = None) -> AsyncIterator[None]:
        """Relay the presses until the block ends; then the ones not written yet get
        :data:`PRESSES_FLUSH_S` more. ``listen``: the store's url, to LISTEN on a
        connection of its own (None: the caller hands each notification to
        :meth:`heard`, and calls :meth:`again` when its LISTEN is back)."""
        async with anyio.create_task_group() as group:
            group.start_soon(self.line.run, name=f"{self.channel_id}-presses")
            group.start_soon(self._every, name=f"{self.channel_id}-presses-again")
            if listen is not None:
                group.start_soon(self._listen, listen, name=f"{self.channel_id}-presses-heard")
            self.presses.send = self.line.put
            try:
                yield
            finally:
                self.presses.send = None  # a press made from now is not relayed
                with anyio.move_on_after(PRESSES_FLUSH_S, shield=True):
                    await self.line.flush()  # the ones relayed already: their last tries
                if self.line:
                    log.warning(
                        "approval_presses_unrelayed_at_stop",
                        channel=self.channel_id,
                        count=len(self.line),
                    )
            group.cancel_scope.cancel()

    def heard(self, payload: str) -> None:
        """A NOTIFY of the presses' channel."""
        press = self.stored.heard(payload)
        if press is not None:
            self.presses.heard(press)

    async def again(self) -> None:
        """Hand on the kept presses not heard here (their NOTIFY missed)."""
        try:
            missed = await self.stored.again()
        except (psycopg.Error, OSError) as exc:
            log.warning(
                "approval_presses_unread", channel=self.channel_id, error=type(exc).__name__
            )
            return
        if missed:
            log.info("approval_presses_read_again", channel=self.channel_id, count=len(missed))
        for press in missed:
            self.presses.heard(press)

    async def _write(self, press: Press) -> bool:
        """Announce a press to every replica (this one too); False when the store could
        not take it (the :class:`PressLine` tries again)."""
        try:
            await self.stored.write(press.encode())
        except (psycopg.Error, OSError) as exc:
            log.warning(
                "approval_press_not_relayed", channel=self.channel_id, error=type(exc).__name__
            )
            return False
        return True

    async def _every(self) -> None:
        while True:
            await anyio.sleep(PRESSES_AGAIN_EVERY)
            await self.again()

    async def _listen(self, url: str) -> None:
        """Hear the presses as they are written; what was written while the connection
        was being made is read from the store once it listens."""
        await listen_for_ever(
            url,
            [self.notify],
            lambda _channel, payload: self.heard(payload),
            unheard="approval_presses_unheard",
            again=self._listening_again,
            retry_every=RETRY_EVERY,
            channel=self.channel_id,
        )

    async def _listening_again(self) -> None:
        self.listening.set()
        await self.again()
