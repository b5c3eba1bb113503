"""Reading the gateway's events: one that cannot be read is skipped, never the end of
the connection.

discord.py turns each dispatch into its objects with the state's parsers (one per event
name, ``ConnectionState.parsers``, which the gateway looks up for every event). A parser
that raises (a field missing or of another type than documented) raises out of the
gateway's read loop, and ``Client.connect`` passes anything but a network error on: the
whole channel would stop over one event. :func:`guard_parsers` wraps each parser so that
such an event is logged by its name and error type (never its content) and skipped; the
next event is read as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger(__name__)

Parser = Callable[[Any], None]


def guard_parsers(parsers: dict[str, Parser]) -> None:
    """Wrap every parser in ``parsers`` (in place) with :func:`guarded`."""
    for name, parse in list(parsers.items()):
        parsers[name] = guarded(name, parse)


def guarded(name: str, parse: Parser) -> Parser:
    def read(data: Any) -> None:
        try:
            parse(data)
        except Exception as exc:  # noqa: BLE001 # any field of any shape: skip the event
            log.warning("discord_event_unreadable", discord_event=name, error=type(exc).__name__)

    return read
