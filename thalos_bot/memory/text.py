"""Words out of text: the FTS5 query we build from user text, and the resemblance measure
that decides whether a new memory repeats an old one.

Both start from the same normalisation (NFKC, case-folded, diacritics removed, split on
anything that is not a letter or digit), so they agree with FTS5's ``unicode61
remove_diacritics 2`` tokenizer about what a word is.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass

_WORD = re.compile(r"[^\W_]+")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_NEGATION = re.compile(
    r"\b(?:not|no|never|nor|cannot|without|none|nothing|nobody|neither)\b|n['’]t\b",
    re.IGNORECASE,
)

STOPWORDS = _wordset(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours
    yourself yourselves s t d ll m re ve don doesn didn isn aren wasn weren won wouldn
    shouldn couldn hasn haven hadn can may might must shall let lets rather instead
    please really still even quite
    """
)
"""Function words: they say little about what a memory is about. Negations are not here:
they are compared separately (see :func:`resemblance`)."""

QUERY_STOPWORDS = STOPWORDS | _wordset(
    """
    not no never nor none please thanks thank hi hello hey ok okay yes yeah yep sure
    tell know remember recall think get got give make want need say said ask
    something anything everything thing things one
    """
)
"""For recall queries: also drop conversational filler a user message is full of."""

MAX_QUERY_TERMS = 32

_NEGATIONS = frozenset(("not", "no", "never", "nor", "cannot", "without", "none", "nothing"))


def words(text: str) -> list[str]:
    """Every word of ``text``, normalised, in order."""
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch))
    return _WORD.findall(unicodedata.normalize("NFC", plain))


def _stem(word: str) -> str:
    """A light plural fold: ``allergies`` → ``allergy``, ``likes`` → ``like``."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> list[str]:
    """The words that carry meaning, lightly stemmed, in order (repeats kept)."""
    return [_stem(w) for w in words(text) if w not in STOPWORDS and w not in _NEGATIONS]


def query_terms(text: str, limit: int = MAX_QUERY_TERMS) -> list[str]:
    """Distinct search terms from user text, in order of appearance, at most ``limit``."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word in QUERY_STOPWORDS or (len(word) == 1 and not word.isdigit()):
            continue
        seen.setdefault(word, None)
        if len(seen) >= limit:
            break
    return list(seen)


def fts_phrase(term: str) -> str:
    """``term`` as an FTS5 string: whatever it holds, it is one phrase, never syntax."""
    return '"' + term.replace('"', '""') + '"'


def fts_or_query(text: str, limit: int = MAX_QUERY_TERMS) -> str | None:
    """An FTS5 MATCH expression that finds records sharing any term with ``text``, or
    ``None`` when ``text`` has no usable term. Every term is quoted, so operators
    (``AND``, ``NEAR``, ``*``, ``^``, ``col:``) in user text are plain words."""
    terms = query_terms(text, limit)
    return " OR ".join(fts_phrase(t) for t in terms) if terms else None


# --- resemblance ---------------------------------------------------------------------


def shingles(tokens: list[str]) -> frozenset[str]:
    """Word 1- and 2-shingles: the words, and each adjacent pair (so order matters)."""
    pairs = (f"{a} {b}" for a, b in itertools.pairwise(tokens))
    return frozenset((*tokens, *pairs))


def negated(text: str) -> bool:
    return _NEGATION.search(unicodedata.normalize("NFKC", text)) is not None


@dataclass(frozen=True, slots=True)
class Resemblance:
    jaccard: float
    """|A∩B| / |A∪B| over 1+2-shingles of content words."""
    containment: float
    """|A∩B| / |smaller|, or 0 when the smaller text has fewer than 3 content words."""
    same_polarity: bool
    """Both texts are negated, or neither is."""
    new_is_larger: bool

    def is_duplicate(self, threshold: float, containment_threshold: float) -> bool:
        if not self.same_polarity:
            return False
        return self.jaccard >= threshold or self.containment >= containment_threshold

    @property
    def score(self) -> float:
        return max(self.jaccard, self.containment) if self.same_polarity else 0.0


MIN_CONTAINED_WORDS = 3


def resemblance(new: str, old: str) -> Resemblance:
    """How closely ``new`` repeats ``old``. Containment lets "prefers dark mode" match
    "prefers dark mode in every editor" (one says all the other does); the polarity check
    keeps "likes coffee" and "does not like coffee" apart."""
    a_words, b_words = content_words(new), content_words(old)
    a, b = shingles(a_words), shingles(b_words)
    common = len(a & b)
    union = len(a | b)
    jaccard = common / union if union else 1.0
    smaller = min(len(set(a_words)), len(set(b_words)))
    containment = common / min(len(a), len(b)) if smaller >= MIN_CONTAINED_WORDS else 0.0
    return Resemblance(
        jaccard=jaccard,
        containment=containment,
        same_polarity=negated(new) == negated(old),
        new_is_larger=len(set(a_words)) >= len(set(b_words)),
    )
