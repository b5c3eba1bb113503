"""LISTEN on PostgreSQL for ever: the one loop every replica's listener runs (the
inbox drain, the approval presses' relay, the web page's events).

Each time the connection is made (:func:`~thalos_bot.storage.pg.database.listening`:
its connect bounded, closed even when a stop cancels it), ``again`` runs first: what
was written while nobody listened was not heard, so the caller reads it back from the
store. Then each notification goes to ``heard``. A failed connection (or a failed
``again``) is tried again every ``retry_every`` seconds; an outage is logged once, as
it begins, under ``unheard``, and its end once, under ``<unheard>_back``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import NoReturn

import anyio
import psycopg
import structlog

from thalos_bot.storage.pg.database import listening

log = structlog.get_logger(__name__)

RETRY_EVERY = 1.0
"""Seconds between two attempts to LISTEN again."""


async def _nothing() -> None:
    return None


async def listen_for_ever(
    url: str,
    channels: Sequence[str],
    heard: Callable[[str, str], None],
    *,
    unheard: str,
    again: Callable[[], Awaitable[None]] = _nothing,
    failed: Callable[[], None] = lambda: None,
    retry_every: float = RETRY_EVERY,
    **fields: str,
) -> NoReturn:
    """Hand each NOTIFY on ``channels`` to ``heard(channel, payload)`` until cancelled;
    ``again`` each time listening (again), before hearing; ``failed`` after each failed
    attempt; ``fields``: what the outage's two log lines carry besides its error."""
    down, back = False, f"{unheard}_back"
    while True:
        try:
            async with listening(url, *channels) as conn:
                await again()
                if down:
                    down = False
                    log.info(back, **fields)
                async with aclosing(conn.notifies()) as notes:
                    async for note in notes:
                        heard(note.channel, note.payload)
        except (psycopg.Error, OSError) as exc:
            failed()
            if not down:
                down = True
                log.warning(unheard, error=type(exc).__name__, **fields)
        await anyio.sleep(retry_every)
