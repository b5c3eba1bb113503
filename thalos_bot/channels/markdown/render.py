"""Markdown into one dialect, piece by piece, cached.

:class:`Renderer` keeps three promises for any input and any dialect: markup in the
answer is shown as text (HTML in it is never interpreted); a marker without its partner
(as in text still being streamed: ``**bo``, an open fence) stays literal, or — for a
fence — is closed at the end; and the visible text is never longer than the Markdown
(the splitter relies on it: a piece that would come out longer is shown as escaped
text). A flood of markers and a nesting too deep for the parser are shown as text too,
so time grows linearly with the input. The transport's own check has the last word: a
part it refuses is sent as plain text instead (by its sender).
"""

from __future__ import annotations

import functools

from thalos_bot.channels.markdown.dialect import Dialect
from thalos_bot.channels.markdown.flood import marker_flood
from thalos_bot.channels.markdown.parse import PARSER, pieces, too_deep
from thalos_bot.channels.markdown.walk import BlockRenderer
from thalos_bot.channels.text.measure import utf16_len


class Renderer:
    """Renders Markdown into ``dialect``; each piece is rendered once (``cache_size``
    pieces are kept)."""

    def __init__(self, dialect: Dialect, cache_size: int = 512) -> None:
        self.dialect = dialect
        self._piece = functools.lru_cache(maxsize=cache_size)(self._render)

    def render(self, source: str) -> str:
        rendered = (self._piece(piece.rstrip("\n")) for piece in pieces(source))
        return "\n\n".join(text for text in rendered if text)

    def clear_cache(self) -> None:
        """Forget rendered pieces (for benchmarks that measure a cold render)."""
        self._piece.cache_clear()

    def _render(self, piece: str) -> str:
        dialect = self.dialect
        if marker_flood(piece):
            return dialect.escape(piece)
        tokens = PARSER.parse(piece)
        if too_deep(tokens):
            return dialect.escape(piece)  # the parser skips what nests too deep: show it all
        text = BlockRenderer(piece.split("\n"), dialect).render(tokens)
        if utf16_len(dialect.visible(text)) > utf16_len(piece):
            return dialect.escape(piece)  # a corner (tabs expanded in code) made it longer
        return text
