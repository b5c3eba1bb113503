"""The channels section's read model: each channel up or down, with its last poll or
event and its last error, from the same :class:`ChannelPair` health that ``thalos-bot
status`` writes to the status file; on replicas, which replica owns each platform
connection, since when, and when it was last taken over."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from thalos_bot.channels.registry import ChannelPair


@dataclass(frozen=True, slots=True)
class ChannelRow:
    name: str
    describe: str
    up: bool
    """Receiving, and it has not failed since it last worked."""
    last_ok_at: datetime | None
    last_error: str | None
    last_error_at: datetime | None


def channel_rows(pairs: Sequence[ChannelPair]) -> list[ChannelRow]:
    """One row per channel, in the daemon's order."""
    return [
        ChannelRow(
            name=str(pair.adapter.channel_id),
            describe=pair.describe or str(pair.adapter.channel_id),
            up=pair.receiving.is_set() and not pair.health.retrying,
            last_ok_at=pair.health.last_ok_at,
            last_error=pair.health.last_error,
            last_error_at=pair.health.last_error_at,
        )
        for pair in pairs
    ]


@dataclass(frozen=True, slots=True)
class ConnectionRow:
    """One platform connection's owner among the replicas (a connection lease)."""

    channel: str
    holder: str | None
    """The replica holding it; None while nobody does (its lease ran out)."""
    since: datetime | None
    taken_over_at: datetime | None
    """When a replica last took it from another (after a kill, a stall); None: only
    ever handed over at clean stops."""
