"""What a memory is: the record, its limits, and the checks a new one must pass."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

MAX_TEXT_CHARS = 4000
MAX_TAGS = 10
MAX_TAG_CHARS = 32
MIN_IMPORTANCE = 1
MAX_IMPORTANCE = 5
DEFAULT_IMPORTANCE = 3
DEFAULT_KIND = "note"
KINDS = ("fact", "preference", "decision", "learning", "note")
"""The kinds we suggest; any slug is accepted, so the set can grow without a migration."""

_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
_ID = re.compile(r"^m-[0-9a-f]{12}$")


class InvalidMemoryError(ValueError):
    """A memory (or a request about one) breaks a rule; the message says which, in words
    fit for the model or the operator."""


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    id: str
    """Public and opaque (``m-`` + 12 hex digits): no hint of how many records exist."""
    owner: str
    agent: str | None
    """``None``: shared across all of the owner's agents."""
    kind: str
    text: str
    tags: tuple[str, ...]
    importance: int
    created_at: datetime
    updated_at: datetime
    last_recalled_at: datetime | None
    archived: bool


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory to store, already checked by :func:`new_memory`."""

    owner: str
    text: str
    kind: str = DEFAULT_KIND
    tags: tuple[str, ...] = ()
    importance: int = DEFAULT_IMPORTANCE
    agent: str | None = None


def check_owner(owner: str) -> str:
    if not owner or not owner.strip():
        raise InvalidMemoryError("memories need a known owner")
    return owner


def clean_text(text: str) -> str:
    """Control characters (but line breaks and tabs) and surrounding whitespace removed;
    empty or overlong text refused."""
    text = "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) != "Cc").strip()
    if not text:
        raise InvalidMemoryError("the text is empty")
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidMemoryError(f"the text is too long (at most {MAX_TEXT_CHARS:,} characters)")
    return text


def clean_kind(kind: str | None) -> str:
    kind = (kind or DEFAULT_KIND).strip().lower()
    if not _KIND.match(kind):
        raise InvalidMemoryError(
            "the kind must be a short slug such as " + ", ".join(KINDS) + " (lower-case "
            "letters, digits, '-' or '_', at most 32 characters)"
        )
    return kind


def clean_tag(tag: str) -> str:
    tag = " ".join(unicodedata.normalize("NFKC", tag).split()).lower()
    if not tag:
        raise InvalidMemoryError("a tag is empty")
    if len(tag) > MAX_TAG_CHARS:
        raise InvalidMemoryError(f"a tag is too long (at most {MAX_TAG_CHARS} characters)")
    if any(unicodedata.category(ch)[0] == "C" for ch in tag):
        raise InvalidMemoryError("a tag contains control characters")
    return tag


def clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Normalised (lower case, single spaces), de-duplicated in order, at most 10."""
    out: list[str] = []
    for tag in tags:
        cleaned = clean_tag(tag)
        if cleaned not in out:
            out.append(cleaned)
    if len(out) > MAX_TAGS:
        raise InvalidMemoryError(f"too many tags (at most {MAX_TAGS})")
    return tuple(out)


def merge_tags(first: Iterable[str], second: Iterable[str]) -> tuple[str, ...]:
    """The union, in order, cut to :data:`MAX_TAGS` (the first's tags win)."""
    out: list[str] = []
    for tag in (*first, *second):
        if tag not in out:
            out.append(tag)
    return tuple(out[:MAX_TAGS])


def clean_importance(importance: int | None) -> int:
    if importance is None:
        return DEFAULT_IMPORTANCE
    if isinstance(importance, bool) or not MIN_IMPORTANCE <= importance <= MAX_IMPORTANCE:
        raise InvalidMemoryError(
            f"importance must be a whole number from {MIN_IMPORTANCE} to {MAX_IMPORTANCE}"
        )
    return importance


def new_memory(
    owner: str,
    text: str,
    *,
    kind: str | None = None,
    tags: Iterable[str] = (),
    importance: int | None = None,
    agent: str | None = None,
) -> NewMemory:
    """Check and normalise everything about a memory before it is stored."""
    return NewMemory(
        owner=check_owner(owner),
        text=clean_text(text),
        kind=clean_kind(kind),
        tags=clean_tags(tags),
        importance=clean_importance(importance),
        agent=agent or None,
    )


def looks_like_id(value: str) -> bool:
    return bool(_ID.match(value))
