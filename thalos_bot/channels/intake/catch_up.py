"""Catching up on what was said while the channel was not connected.

A platform that delivers to a connected client only (a Discord gateway session, a Slack
socket once its few retries are spent) never hands over a message said while the daemon
was stopped or its connection was down. So a transport keeps, per chat it serves, the
mark of the last message it admitted (the kit's
:class:`~thalos_bot.channels.delivery.markbook.MarkBook`, noted when the pump takes the
message), and on each new connection :func:`catch_up` reads back, chat by chat, what came
after that mark through the transport's own ``read`` (oldest first, bounded), and hands
each message to ``admit``: the path a live message takes, so a message that also arrives
live (or again, as a retry) is dropped there as a duplicate. A chat whose read fails is
logged (its error's name, never a message's text) and the others are still caught up.

:class:`CatchingUp` runs it once per connection opened; :func:`paced` makes a reader's
calls through a pacer of the kit's (the channel's, or one for these reads alone), and
obeys a platform's "wait" (a 429's ``Retry-After``) there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio
import structlog

from thalos_bot.channels.admission.guard import where
from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.pacing.gate import GlobalPacer

log = structlog.get_logger(__name__)

T = TypeVar("T")

PACED_TRIES = 4
"""Calls a paced read makes before a repeated "wait" counts as its failure."""


async def catch_up(
    channel: str,
    marks: MarkBook,
    read: Callable[[str, int], Awaitable[Sequence[T]]],
    admit: Callable[[T], Awaitable[None]],
    classify: Callable[[Exception], Classified | None],
) -> None:
    """``read(chat, mark)``: the chat's messages after ``mark``, oldest first, as many
    as the transport reads back. A read that fails with an error the wire's ``classify``
    knows is logged with its reason; any other error is a bug, and is raised."""
    failed, caught = f"{channel}_catch_up_failed", f"{channel}_caught_up"
    for chat, mark in marks.known().items():
        try:
            missed = await read(chat, mark)
        except Exception as exc:
            if (kind := classify(exc)) is None:
                raise
            log.warning(failed, chat=chat, error=kind.reason)
            continue
        if missed:
            log.info(caught, chat=chat, messages=len(missed))
        for message in missed:
            await admit(message)


class CatchingUp:
    """A catch-up (``once``: :func:`catch_up` with its arguments) run once for each
    connection opened (:meth:`connected`), in its own task (:meth:`run`); connections
    opened while one runs make one more."""

    def __init__(self, once: Callable[[], Awaitable[None]]) -> None:
        self._once = once
        self._wake = anyio.Event()

    def connected(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        """Until cancelled; a run that fails (a bug: :func:`catch_up` raised what the
        wire does not know) is logged, and the next connection tries again: the channel
        goes on taking live messages."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            try:
                await self._once()
            except Exception as exc:  # noqa: BLE001 - live messages must go on
                log.error(  # noqa: TRY400 - no traceback: it may quote a message
                    "catch_up_failed", error=type(exc).__name__, where=where(exc)
                )


async def paced(
    pacer: GlobalPacer,
    classify: Callable[[Exception], Classified | None],
    call: Callable[[], Awaitable[T]],
) -> T:
    """``call()`` once the pacer lets it go; told to wait, the pacer holds every call
    made through it for that long, then it goes again (at most :data:`PACED_TRIES` times)."""
    tries = 1
    while True:
        await pacer.acquire()
        try:
            return await call()
        except Exception as exc:
            kind = classify(exc)
            if kind is None or kind.failure is not Failure.RETRY_AFTER or tries >= PACED_TRIES:
                raise
            tries += 1
            pacer.block_for(kind.retry_after or 1.0)
