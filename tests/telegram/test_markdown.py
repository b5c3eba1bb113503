"""The model's Markdown as Telegram HTML, checked with the fake's copy of Telegram's parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes.telegram_html import parse_html, utf16_len
from tests.hypothesis_budget import examples
from thalos_bot_telegram.markdown import to_html


def visible(source: str) -> tuple[str, list[tuple[str, str]]]:
    """What a user sees, and the (entity type, covered text) pairs."""
    parsed = parse_html(to_html(source))
    assert parsed.dropped == (), "nested the way Telegram refuses"
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
    text, entities = visible("a < b && c > d; <script>alert('x')</script> <b>no</b> &amp;")
    assert text == "a < b && c > d; <script>alert('x')</script> <b>no</b> &"
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
        "  ◦ nested",
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
    parsed = parse_html(to_html(source))  # raises HtmlError if Telegram would refuse it
    assert parsed.dropped == ()


# -- streaming: what is not finished yet stays literal ---------------------------------


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("The answer is **bo", "The answer is **bo"),
        ("Call `pri", "Call `pri"),
        ("See [the docs](https://exa", "See [the docs](https://exa"),
        ("Use ~~old", "Use ~~old"),
    ],
)
def test_an_unfinished_marker_stays_literal(source: str, shown: str) -> None:
    assert visible(source) == (shown, [])


def test_an_unfinished_marker_becomes_formatting_once_closed() -> None:
    assert visible("The answer is **bold**") == ("The answer is bold", [("bold", "bold")])


# -- what the regex renderer got wrong ----------------------------------------------------


def test_backslash_escapes_are_honoured() -> None:
    text, entities = visible(r"\*not italic\* and \`not code\` and 2 \* 3")
    assert text == "*not italic* and `not code` and 2 * 3"
    assert entities == []


def test_an_image_becomes_a_link_without_a_stray_bang() -> None:
    text, entities = visible("Here: ![the diagram](https://example.org/d.png) — done")
    assert text == "Here: the diagram — done"
    assert entities == [("text_link", "the diagram")]
    assert 'href="https://example.org/d.png"' in to_html("![x](https://example.org/d.png)")


def test_nested_quotes_are_flattened_into_one_quote() -> None:
    text, entities = visible("> outer\n> > inner\n> > > deepest\n\nafter")
    assert ">" not in text
    assert text == "outer\ninner\ndeepest\n\nafter"
    assert entities == [("blockquote", "outer\ninner\ndeepest")]


def test_a_very_deep_quote_renders() -> None:
    text, entities = visible(">" * 10_000 + " deep")
    assert entities[0][0] == "blockquote"
    assert ">" not in text[:100]


def test_a_link_whose_url_has_parentheses() -> None:
    html = to_html("[Foo](https://en.wikipedia.org/wiki/Foo_(bar)) is a page.")
    parsed = parse_html(html)
    assert parsed.text == "Foo is a page."
    assert parsed.entities == (
        {
            "type": "text_link",
            "url": "https://en.wikipedia.org/wiki/Foo_(bar)",
            "offset": 0,
            "length": 3,
        },
    )


def test_code_inside_a_link_is_dropped_to_the_links_text() -> None:
    text, entities = visible("Install with [`pip install thalos`](https://pypi.org/p/thalos).")
    assert text == "Install with pip install thalos."
    assert entities == [("text_link", "pip install thalos")]


def test_code_inside_bold_is_cut_out_of_the_bold() -> None:
    text, entities = visible("**Run `make test` first** and # Heading `x`")
    assert text == "Run make test first and # Heading x"
    assert entities[:3] == [("bold", "Run "), ("code", "make test"), ("bold", " first")]


def test_a_heading_made_of_code_leaves_no_empty_bold() -> None:
    assert to_html("## `main.py`") == "<code>main.py</code>"


def test_numbered_lists_keep_their_numbers_and_nested_bullets_indent() -> None:
    text, _ = visible("3. three\n4. four\n   - sub\n     - subsub\n5. five")
    assert text.splitlines() == ["3. three", "4. four", "  ◦ sub", "    ▪ subsub", "5. five"]


def test_task_lists_show_boxes() -> None:
    text, _ = visible("- [ ] write tests\n- [x] write code\n  - [ ] nested\n- no box")
    assert text.splitlines() == ["☐ write tests", "☑ write code", "  ☐ nested", "• no box"]


def test_a_thematic_break_and_setext_heading() -> None:
    text, entities = visible("Title\n=====\n\nabove\n\n---\n\nbelow")
    assert text == "Title\n\nabove\n\n———\n\nbelow"
    assert entities == [("bold", "Title")]


# -- tables ------------------------------------------------------------------------------


def test_a_narrow_table_is_an_aligned_monospace_block() -> None:
    source = (
        "| Name | Qty | Price |\n|:-----|----:|------:|\n"
        "| tea | 2 | 3.50 |\n| coffee | 10 | 12.00 |"
    )
    text, entities = visible(source)
    assert entities == [("pre", text)]
    lines = text.splitlines()
    assert lines == [
        "Name   │ Qty │ Price",
        "───────┼─────┼──────",
        "tea    │   2 │  3.50",
        "coffee │  10 │ 12.00",
    ]


def test_wide_characters_count_twice_when_aligning() -> None:
    text, _ = visible("| 名前 | n |\n|---|---|\n| 東京 | 1 |\n| ab | 2 |")
    assert text.splitlines()[2:] == ["東京 │ 1", "ab   │ 2"]


def test_a_table_wider_than_a_phone_becomes_one_card_per_row() -> None:
    source = (
        "| Library | What it does well | Where it falls short |\n"
        "|---|---|---|\n"
        "| **httpx** | async and sync clients with one API | no HTTP/3 yet |\n"
        "| requests | the most familiar interface in Python | no async support at all |\n"
    )
    text, entities = visible(source)
    assert text.split("\n\n") == [
        (
            "httpx\nWhat it does well: async and sync clients with one API\n"
            "Where it falls short: no HTTP/3 yet"
        ),
        (
            "requests\nWhat it does well: the most familiar interface in Python\n"
            "Where it falls short: no async support at all"
        ),
    ]
    assert ("bold", "httpx") in entities
    assert ("bold", "requests") in entities


# -- properties --------------------------------------------------------------------------

MARKDOWNISH = st.lists(
    st.sampled_from(
        [*"ab *_`~[]()!<>&#|-:\\\n123.", "é", "😀", "👍🏽", "http://x.y/", "```", "\n\n"]
    ),
    max_size=200,
).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(MARKDOWNISH)
def test_any_text_renders_valid_no_longer_than_its_source(source: str) -> None:
    parsed = parse_html(to_html(source))
    assert parsed.dropped == ()
    assert utf16_len(parsed.text) <= utf16_len(source)


@pytest.mark.parametrize(
    "line",
    ["`a`*" * 1024, "*" * 4096, "_a" * 2048, "[" * 4096, "![" * 2048, "*a **b " * 600, "<" * 4096],
)
def test_adversarial_lines_render_valid(line: str) -> None:
    parsed = parse_html(to_html(line))
    assert parsed.dropped == ()
    assert utf16_len(parsed.text) <= utf16_len(line)


def test_a_flood_of_markers_is_shown_as_the_text_it_is() -> None:
    """Was: one 4 KB line of `a`* took 7.6 s to render, on the event loop."""
    line = "`a`*" * 1024
    assert visible(line) == (line, [])
    assert visible("`a` and *b*") == ("a and b", [("code", "a"), ("italic", "b")])
