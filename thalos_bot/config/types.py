"""Small value types shared by the configuration models."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0
MAX_DURATION = 366 * DAY
"""No duration in ``bot.toml`` may be longer: beyond it a timer is a typo, and a deadline
or ``timedelta`` built from ``inf`` or ``1e14`` seconds overflows mid-turn."""

_UNIT = {"d": DAY, "h": HOUR, "m": MINUTE, "s": 1.0, "ms": 0.001}
_ORDER = tuple(_UNIT)
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_EXAMPLES = '30, "30s", "15m", "1h30m" or "500ms"'
OFF = "off"


def _compound(text: str) -> float:
    """``"1h30m"``, ``"1m 30s"``, ``"500ms"``, ``"90"``: units largest first, each once."""
    body = text.strip().lower()
    if _NUMBER.fullmatch(body):
        return float(body)
    total, at, last = 0.0, 0, -1
    for match in _PART.finditer(body):
        unit = _ORDER.index(match.group(2))
        if body[at : match.start()].strip() or unit <= last:
            break
        total += float(match.group(1)) * _UNIT[match.group(2)]
        at, last = match.end(), unit
    else:
        if last >= 0 and not body[at:].strip():
            return total
    raise ValueError(f"{text!r} is not a duration; use e.g. {_EXAMPLES}")


def parse_duration(text: str) -> float:
    """``"90d"``, ``"1h30m"``, ``"30"`` as seconds; raises ValueError naming the shape."""
    return _compound(text)


def _say(seconds: float) -> str:
    """``5400`` as ``"1h30m"``, for bounds in error messages."""
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    parts, left = [], seconds
    for unit in ("d", "h", "m"):
        count, left = divmod(left, _UNIT[unit])
        if count:
            parts.append(f"{count:g}{unit}")
    if left or not parts:
        parts.append(f"{left:g}s")
    return "".join(parts)


def duration(low: float = 0.0, high: float = MAX_DURATION, *, off: bool = False) -> BeforeValidator:
    """Validation for one duration key: seconds as a number, or a string such as
    ``"90s"``, ``"1h30m"`` or ``"250ms"``; more than 0, at least ``low`` and at most
    ``high``. With ``off``, the string ``"off"`` is also accepted, as ``None``. nan,
    inf, negative and out-of-range values are refused, saying which bound."""
    turn_off = f'; to turn it off write "{OFF}"' if off else ""

    def parse(value: Any) -> float | None:
        if off and (value is None or (isinstance(value, str) and value.strip().lower() == OFF)):
            return None
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            # pydantic reports a ValueError (not a TypeError) as a validation error
            raise ValueError(f"expected a duration such as {_EXAMPLES}{turn_off}")  # noqa: TRY004
        try:
            seconds = _compound(value) if isinstance(value, str) else float(value)
        except ValueError as exc:
            raise ValueError(f"{exc}{turn_off}") from None
        if math.isnan(seconds):
            raise ValueError(f"nan is not a duration; use e.g. {_EXAMPLES}{turn_off}")
        if math.isinf(seconds):
            raise ValueError(f"must be finite, at most {_say(high)}{turn_off}")
        if seconds < 0:
            raise ValueError(f"must not be negative{turn_off}")
        if low == 0 and seconds == 0:
            raise ValueError(f"must be more than 0{turn_off}")
        if seconds < low:
            raise ValueError(f"must be at least {_say(low)} ({seconds:g}s given){turn_off}")
        if seconds > high:
            raise ValueError(f"must be at most {_say(high)} ({seconds:g}s given){turn_off}")
        return seconds

    return BeforeValidator(parse)


Seconds = Annotated[float, duration()]
"""A positive duration in seconds, at most :data:`MAX_DURATION`. A key with its own
range writes ``Annotated[float, duration(low, high)]``."""

SLUG_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"
Slug = Annotated[str, Field(pattern=SLUG_PATTERN)]


def _check_glob(value: str) -> str:
    if not value or value != value.strip():
        raise ValueError("a glob must be non-empty and have no surrounding spaces")
    return value


Glob = Annotated[str, AfterValidator(_check_glob)]
