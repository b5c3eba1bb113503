"""The port a transport's dialect renderer implements: what the shared Markdown walk
(:mod:`thalos_bot.channels.markdown.walk`) writes for each construct.

A dialect is an emitter of strings. The walk decides the layout every transport shares
(headings in bold, bullets ``•◦▪`` by depth, task boxes ``☐``/``☑``, numbered lists keep
their numbers, nested quotes flattened, tables as a grid or as cards); the dialect
decides the markup. Everything it returns for text must be escaped by :meth:`escape`,
and :meth:`visible` must give back what a reader sees of anything it wrote, so the
renderer can keep its promise that the shown text is never longer than the Markdown.
"""

from __future__ import annotations

from typing import Literal, Protocol

Style = Literal["bold", "italic", "strike"]
"""The inline styles CommonMark (with GitHub's strikethrough) has."""


class Dialect(Protocol):
    @property
    def code_in_emphasis(self) -> bool:
        """May a code span sit inside bold/italic/strike? (Telegram: no; the walk then
        closes the emphasis around the span and reopens it after.)"""
        ...

    def escape(self, text: str) -> str:
        """Text shown as it is (markup in it never interpreted)."""
        ...

    def visible(self, rendered: str) -> str:
        """What a reader sees of ``rendered`` (markup dropped, escapes decoded)."""
        ...

    def style(self, style: Style) -> tuple[str, str]:
        """The opening and closing markup of an inline style."""
        ...

    def link(self, url: str) -> tuple[str, str] | None:
        """The markup around a link's label, or None for a link the transport's clients
        should not open (then the label is shown as text)."""
        ...

    def code_span(self, code: str) -> str:
        """An inline code span (``code`` not yet escaped)."""
        ...

    def code_block(self, code: str, language: str | None) -> str:
        """A fenced or indented code block, with its language if a sane one was given."""
        ...

    def preformatted(self, text: str) -> str:
        """Monospace text (a table laid out as a grid)."""
        ...

    def quote(self) -> tuple[str, str]:
        """The markup around a block quote (quotes are never nested)."""
        ...

    @property
    def rule(self) -> str:
        """A thematic break."""
        ...
