"""Skill names that look alike: a name folded to the Latin letters it looks like.

Skill names may hold any letters, so ``pdf`` in Latin and ``рdf`` with a Cyrillic
``р`` are two names that read the same. :func:`skeleton` folds a name (NFKC, case
folded, marks removed, then every letter of Cyrillic, Greek and a few other scripts
that looks like a Latin letter or digit replaced by it), so two names with the same
skeleton are one name to a reader. :func:`shadowed` says which trusted name a new one
would pass for.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

# Letters drawn like a Latin letter or digit, from the scripts most often used to
# imitate Latin names: Cyrillic, Greek, Armenian, and Latin's own look-alikes. Lower
# case only: names are case folded first.
_LOOKS_LIKE: dict[str, str] = {
    # Cyrillic
    "а": "a", "б": "6", "в": "b", "г": "r", "д": "a", "е": "e", "ё": "e", "з": "3",
    "и": "u", "к": "k", "л": "n", "м": "m", "н": "h", "о": "o", "п": "n", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ц": "u", "ч": "4", "ш": "w", "ь": "b",
    "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w",
    "ӏ": "l", "ү": "y", "ɡ": "g", "ѵ": "v", "ѡ": "w", "ґ": "r", "є": "e", "ө": "o",
    # Greek
    "α": "a", "β": "b", "γ": "y", "δ": "d", "ε": "e", "η": "n", "ι": "i", "κ": "k",
    "μ": "u", "ν": "v", "ο": "o", "ρ": "p", "σ": "o", "τ": "t", "υ": "u", "χ": "x",
    "ω": "w", "ϲ": "c", "ϳ": "j", "ς": "c",
    # Armenian
    "օ": "o", "ս": "u", "հ": "h", "ո": "n", "ց": "g", "զ": "q",
    # Latin and others drawn like another Latin letter or a digit
    "ı": "i", "ȷ": "j", "ł": "l", "ƚ": "l", "ɩ": "i", "ɑ": "a", "ɒ": "a", "ʋ": "u",
    "ƅ": "b", "ɪ": "i", "ʟ": "l", "ᴅ": "d", "ᴋ": "k", "ᴍ": "m", "ᴏ": "o", "ᴛ": "t",
    "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ᴢ": "z", "0": "o", "1": "l", "ǀ": "l", "_": "-",
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "−": "-",
}  # fmt: skip


def skeleton(name: str) -> str:
    """``name`` as a reader sees it: two names with the same skeleton look alike."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", name).casefold())
    kept = (c for c in folded if not unicodedata.combining(c))
    letters = "".join(_LOOKS_LIKE.get(c, c) for c in kept)
    # "rn" reads as "m", "vv" as "w", "cl" as "d": fold the pairs too
    return letters.replace("rn", "m").replace("vv", "w").replace("cl", "d")


def shadowed(name: str, trusted: Iterable[str]) -> str | None:
    """The trusted name (other than ``name`` itself) that ``name`` looks like, or None."""
    mine = skeleton(name)
    for other in trusted:
        if other != name and skeleton(other) == mine:
            return other
    return None
