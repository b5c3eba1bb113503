"""``[guard]``: the result guard on tool results and recalled memories."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from thalos_bot.config.types import Slug

MAX_PATTERN = 1000


def _compiles(pattern: str) -> str:
    if len(pattern) > MAX_PATTERN:
        raise ValueError(f"at most {MAX_PATTERN} characters")
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression ({exc})") from None
    if compiled.match(""):
        raise ValueError("the pattern matches empty text, so it would match everything")
    return pattern


Pattern = Annotated[str, AfterValidator(_compiles)]


class GuardSettings(BaseModel):
    """``[guard]``. ``patterns`` are extra injection phrasings (quoted to the model when
    found), ``secret_patterns`` extra secrets (cut out, never quoted); both are tables
    of ``name = "regular expression"``, matched case-insensitively.
    :func:`thalos_bot.guard.guard.build_guard` turns them into the guard."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["annotate", "withhold", "off"] = "annotate"
    patterns: dict[Slug, Pattern] = Field(default_factory=dict)
    secret_patterns: dict[Slug, Pattern] = Field(default_factory=dict)
