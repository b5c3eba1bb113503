"""Turning whatever the model typed into a safe FTS5 ``MATCH`` expression.

Only runs of letters and digits survive; each becomes a quoted prefix term and the
terms are OR-ed, so quotes, operators (``AND``, ``NEAR``, ``-``, ``^``, ``:``), brackets
and column filters in the input are plain text and never an FTS5 syntax error.
"""

from __future__ import annotations

import re

MAX_TERMS = 16
MAX_TERM_CHARS = 64
_TERM = re.compile(r"[^\W_]+")
"""Letters and digits: what FTS5's unicode61 tokenizer keeps as token characters."""


def query_terms(text: str) -> list[str]:
    """The distinct search terms in ``text``, in order (at most :data:`MAX_TERMS`)."""
    terms: dict[str, None] = {}
    for match in _TERM.finditer(text):
        terms.setdefault(match.group()[:MAX_TERM_CHARS].lower(), None)
        if len(terms) == MAX_TERMS:
            break
    return list(terms)


def match_expression(text: str) -> str | None:
    """An FTS5 query matching any term of ``text`` (as a prefix), or None when ``text``
    has no letters or digits."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"*' for term in terms)
