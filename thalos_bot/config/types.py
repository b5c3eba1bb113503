"""Small value types shared by the configuration models."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def _parse_duration(value: Any) -> Any:
    """Seconds as a number, or a string such as ``"90s"``, ``"30m"``, ``"2h"``, ``"250ms"``."""
    if isinstance(value, bool):
        msg = 'expected a duration such as 30, "30s", "15m" or "2h"'
        raise ValueError(msg)  # noqa: TRY004 - pydantic reports ValueError as a validation error
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            raise ValueError(f'{value!r} is not a duration; use e.g. 30, "30s", "15m", "2h"')
        return float(match.group(1)) * _UNIT[match.group(2)]
    return value


Seconds = Annotated[float, BeforeValidator(_parse_duration), Field(gt=0)]
"""A positive duration in seconds."""

SLUG_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"
Slug = Annotated[str, Field(pattern=SLUG_PATTERN)]


def _check_glob(value: str) -> str:
    if not value or value != value.strip():
        raise ValueError("a glob must be non-empty and have no surrounding spaces")
    return value


Glob = Annotated[str, AfterValidator(_check_glob)]
