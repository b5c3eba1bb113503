"""The model's Markdown as Telegram HTML, checked with the fake's copy of Telegram's parser."""

from __future__ import annotations

import pytest

from tests.fakes.telegram_html import parse_html
from thalos_bot_telegram.markdown import to_html


def visible(source: str) -> tuple[str, list[tuple[str, str]]]:
    """What a user sees, and the (entity type, covered text) pairs."""
    parsed = parse_html(to_html(source))
    text = parsed.text
    utf16 = text.encode("utf-16-le")
    covered = [
        (
            str(e["type"]),
            utf16[2 * e["offset"] : 2 * (e["offset"] + e["length"])].decode("utf-16-le"),
        )
        for e in parsed.entities
    ]
    return text, covered


def test_inline_styles_become_entities() -> None:
    text, entities = visible("This is **bold**, *italic*, __also bold__, ~~gone~~ and `x < y`.")
    assert text == "This is bold, italic, also bold, gone and x < y."
    assert entities == [
        ("bold", "bold"),
        ("italic", "italic"),
        ("bold", "also bold"),
        ("strikethrough", "gone"),
        ("code", "x < y"),
    ]


def test_html_special_characters_are_escaped() -> None:
    text, entities = visible("a < b && c > d; <script>alert('x')</script> &amp;")
    assert text == "a < b && c > d; <script>alert('x')</script> &amp;"
    assert entities == []


def test_fenced_code_keeps_its_language_and_is_not_formatted() -> None:
    source = "Try:\n```python\nif a < b and c**2:\n    print('*hi*')\n```\nDone."
    html = to_html(source)
    assert '<pre><code class="language-python">' in html
    parsed = parse_html(html)
    assert parsed.text == "Try:\nif a < b and c**2:\n    print('*hi*')\nDone."
    assert parsed.entities[0]["type"] == "pre"
    assert parsed.entities[0]["language"] == "python"


def test_an_unclosed_fence_is_closed() -> None:
    text, entities = visible("Streaming:\n```js\nconst a = 1;")
    assert text == "Streaming:\nconst a = 1;"
    assert entities[0] == ("pre", "const a = 1;")


def test_links_headings_lists_and_quotes() -> None:
    source = (
        "# Title\n"
        "See [the docs](https://example.org/a?b=1&c=2) and <https://example.org>.\n"
        "- one\n"
        "* two with *emphasis*\n"
        "  + nested\n"
        "1. first\n"
        "> quoted **line**\n"
        "> second"
    )
    html = to_html(source)
    assert 'href="https://example.org/a?b=1&amp;c=2"' in html
    text, entities = visible(source)
    assert text.splitlines() == [
        "Title",
        "See the docs and https://example.org.",
        "• one",
        "• two with emphasis",
        "  • nested",
        "1. first",
        "quoted line",
        "second",
    ]
    kinds = [kind for kind, _ in entities]
    assert kinds.count("text_link") == 2
    assert ("bold", "Title") in entities
    assert ("blockquote", "quoted line\nsecond") in entities


def test_unsafe_link_targets_stay_text() -> None:
    text, entities = visible("[click](javascript:alert(1)) [x](file:///etc/passwd)")
    assert entities == []
    assert "javascript:alert" in text


@pytest.mark.parametrize(
    "source",
    [
        "**unclosed bold",
        "*half",
        "a * b * c",
        "snake_case_name and __init__ and 2*3*4",
        "``` ",
        "`",
        "***",
        "**bold *italic** text*",
        "***both***",
        "[link](https://example.org",
        "<b>not a tag</b> & <i>",
        "~~~\ncode\n~~~~",
        "> ",
        "#",
        "- ",
        "emoji 👍🏽 **bold 🎉** `code 🐍`",
    ],
)
def test_any_text_renders_to_html_telegram_accepts(source: str) -> None:
    parse_html(to_html(source))  # raises HtmlError if Telegram would refuse it
