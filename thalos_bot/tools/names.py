"""Qualified tool names: ``{source}__{tool}``, made acceptable to the model provider.

The Anthropic Messages API takes tool names matching ``^[a-zA-Z0-9_-]{1,64}$``. Other
characters become ``_``; a name that is too long is cut and given a short hash of the
original; names that still collide get the same hash treatment, all but one. Every rule
depends only on the set of names, never on listing order, so names are stable across
restarts.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

MAX_NAME_LENGTH = 64
SEPARATOR = "__"
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_VALID = re.compile(rf"^[A-Za-z0-9_-]{{1,{MAX_NAME_LENGTH}}}$")
_HASH_LENGTH = 8


@dataclass(frozen=True, slots=True)
class AssignedName:
    """The name shown to the model for ``source``'s tool ``tool``.

    ``natural`` is ``{source}__{tool}`` as written; ``note`` says why ``qualified`` differs
    from it (``None`` when it does not).
    """

    source: str
    tool: str
    natural: str
    qualified: str
    note: str | None = None


def natural_name(source: str, tool: str) -> str:
    return f"{source}{SEPARATOR}{tool}"


def is_valid_name(name: str) -> bool:
    return _VALID.match(name) is not None


def sanitise(name: str) -> str:
    """Replace every character the provider rejects with ``_``."""
    return _INVALID.sub("_", name) or "_"


def _hashed(base: str, pair: tuple[str, str], salt: int = 0) -> str:
    seed = f"{pair[0]}\0{pair[1]}" + (f"\0{salt}" if salt else "")
    digest = hashlib.sha256(seed.encode("utf-8")).hexdigest()[:_HASH_LENGTH]
    return f"{base[: MAX_NAME_LENGTH - _HASH_LENGTH - 1]}_{digest}"


def _candidate(pair: tuple[str, str]) -> tuple[str, str | None]:
    natural = natural_name(*pair)
    clean = sanitise(natural)
    if len(clean) > MAX_NAME_LENGTH:
        return _hashed(clean, pair), f"shortened to {MAX_NAME_LENGTH} characters"
    if clean != natural:
        return clean, "characters the provider rejects became '_'"
    return clean, None


def assign_names(pairs: Iterable[tuple[str, str]]) -> list[AssignedName]:
    """Unique, valid names for ``(source, tool)`` pairs, in the order given.

    A repeated pair is named once. When several pairs share a candidate name, the one
    whose natural name *is* the candidate keeps it (else the smallest natural name); the
    others get a short hash of their source and tool appended.
    """
    unique = list(dict.fromkeys(pairs))
    candidates = {pair: _candidate(pair) for pair in unique}
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for pair in unique:
        groups[candidates[pair][0]].append(pair)

    assigned: dict[tuple[str, str], tuple[str, str | None]] = {}
    losers: list[tuple[tuple[str, str], tuple[str, str]]] = []
    for candidate, members in groups.items():
        winner, *others = sorted(
            members, key=lambda p: (natural_name(*p) != candidate, natural_name(*p), p)
        )
        assigned[winner] = candidates[winner]
        losers.extend((pair, winner) for pair in others)

    taken = {name for name, _ in assigned.values()}
    for pair, winner in sorted(losers, key=lambda item: (natural_name(*item[0]), item[0])):
        salt = 0
        name = _hashed(candidates[pair][0], pair)
        while name in taken:
            salt += 1
            name = _hashed(candidates[pair][0], pair, salt)
        taken.add(name)
        assigned[pair] = (name, f"renamed: {natural_name(*winner)!r} has the same name")

    return [AssignedName(pair[0], pair[1], natural_name(*pair), *assigned[pair]) for pair in unique]
