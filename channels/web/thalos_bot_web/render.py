"""Markdown to HTML that cannot run anything, on the server.

The model's text goes through markdown-it-py (CommonMark, raw HTML off: a ``<script>``
the model writes comes out as text) and then through nh3 (the Ammonia sanitizer), which
keeps only a short list of tags and attributes and only http, https and mailto links.
Images are not kept: an ``<img>`` from the model could make the browser fetch another
site. The page's Content-Security-Policy stands behind both.
"""

from __future__ import annotations

import html

import nh3
from markdown_it import MarkdownIt

TAGS = {
    "a", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6",
    "hr", "i", "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead",
    "tr", "ul",
}  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}, "td": {"align"}, "th": {"align"}}
SCHEMES = {"http", "https", "mailto"}

_parser = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(
    ["table", "strikethrough"]
)


def markdown(text: str) -> str:
    """The model's Markdown as safe HTML."""
    return nh3.clean(
        _parser.render(text),
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=SCHEMES,
        link_rel="noopener noreferrer nofollow",
        set_tag_attribute_values={"a": {"target": "_blank"}},
        strip_comments=True,
    )


def plain(text: str) -> str:
    """A person's own words or a notice: escaped, line breaks kept by CSS."""
    return html.escape(text)
