"""What the model writes, rendered: Markdown kept, anything that could run or fetch gone."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from thalos_bot_web.render import ATTRIBUTES, TAGS, markdown


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def elements(markup: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(markup)
    return parser.found


HOSTILE = [
    "<script>alert(1)</script>",
    "[x](javascript:alert(1))",
    "[x](JaVaScRiPt:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "[x](vbscript:msgbox)",
    '<a href="javascript:alert(1)">x</a>',
    '<img src=x onerror="alert(1)">',
    "![x](https://tracker.example/p.png)",
    "<svg onload=alert(1)>",
    '<iframe src="https://example.org"></iframe>',
    "<style>body{display:none}</style>",
    '<div style="background:url(https://t.example)">x</div>',
    "[x](<javascript:alert(1)>)",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_nothing_that_runs_or_fetches_survives(text: str) -> None:
    rendered = markdown(text)
    for tag, attrs in elements(rendered):
        assert tag in TAGS, rendered
        allowed = ATTRIBUTES.get(tag, set()) | ({"target", "rel"} if tag == "a" else set())
        assert set(attrs) <= allowed, rendered
        href = (attrs.get("href") or "https:").strip().lower()
        assert href.startswith(("https:", "http:", "mailto:")), rendered
    assert 'tracker.example/p.png"' not in rendered  # no image is fetched


def test_markdown_is_kept() -> None:
    rendered = markdown("Some **bold**, `code` and [a link](https://example.org/x).\n\n- one")
    assert "<strong>bold</strong>" in rendered
    assert "<code>code</code>" in rendered
    assert '<a href="https://example.org/x"' in rendered
    assert 'rel="noopener noreferrer nofollow"' in rendered
    assert "<li>one</li>" in rendered


def test_a_code_block_shows_markup_as_text() -> None:
    rendered = markdown("```html\n<script>alert(1)</script>\n```")
    assert "&lt;script&gt;" in rendered
    assert '<code class="language-html">' in rendered
