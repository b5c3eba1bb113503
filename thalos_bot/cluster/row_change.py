"""What a connection keeps beside its lease, row by row (:class:`~thalos_bot.channels.
connection_state.ConnectionRows`): the rows and one fenced write's change. Plain data,
below both the port and its PostgreSQL table (:mod:`.connection_rows`)."""

from __future__ import annotations

from dataclasses import dataclass, field

Row = tuple[str, str, str, bytes]
"""One kept row: its kind, its group, its name (the three are its key), and its value."""


@dataclass
class RowChange:
    """What one fenced write changes, in one transaction: first everything (``clear``),
    then each (kind, group) in ``drop``, then each row of ``put`` added or replaced."""

    put: list[Row] = field(default_factory=list)
    drop: list[tuple[str, str]] = field(default_factory=list)
    clear: bool = False
