"""What was raised inside a task group: anyio hands it on wrapped in an exception group
(groups in groups, when task groups nest). The daemon, the standby and the commands
look for the one kind of failure they have a sentence for."""

from __future__ import annotations

from typing import TypeVar

E = TypeVar("E", bound=BaseException)


def found_in(exc: BaseException, kind: type[E]) -> E | None:
    """``exc`` itself when it is a ``kind``, else the first ``kind`` in its groups
    (depth first); None when there is none."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := found_in(inner, kind)) is not None:
                return found
    return None
