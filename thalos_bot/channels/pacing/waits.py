"""The wait a platform's 429 asks for in its headers (Slack's and Discord's Retry-After,
Discord's X-RateLimit-Reset-After), read the same way for each."""

from __future__ import annotations

from collections.abc import Sequence


def header_wait(headers: object, names: Sequence[str] = ("Retry-After",)) -> float | None:
    """The longest wait in seconds ``headers`` give under ``names`` (None: none is
    readable). Names are tried as given and in lower case (a plain dict of headers); a
    value may be a list of them (the first counts)."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    waits: list[float] = []
    for name in names:
        raw = get(name) or get(name.lower())
        raw = raw[0] if isinstance(raw, list) and raw else raw
        try:
            waits.append(float(raw))
        except (TypeError, ValueError):
            continue
    return max(waits) if waits else None
