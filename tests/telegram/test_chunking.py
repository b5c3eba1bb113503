"""Splitting long replies at 4096 UTF-16 code units, with code fences reopened."""

from __future__ import annotations

from tests.fakes.telegram_html import parse_html, utf16_len
from thalos_bot_telegram.chunking import MAX_UNITS, split
from thalos_bot_telegram.markdown import to_html


def test_utf16_counting_treats_astral_emoji_as_two_units() -> None:
    text = "👍" * 3000  # 6000 UTF-16 code units, 3000 Python characters
    parts = split(text)
    assert len(parts) == 2
    assert all(utf16_len(part.text) <= MAX_UNITS for part in parts)
    assert "".join(part.text for part in parts) == text


def test_paragraph_boundaries_are_preferred() -> None:
    paragraphs = [f"Paragraph {i}. " + "word " * 150 for i in range(12)]
    text = "\n\n".join(p.strip() for p in paragraphs)
    parts = split(text)
    assert len(parts) > 1
    for part in parts:
        assert utf16_len(part.text) <= MAX_UNITS
        assert part.text.startswith("Paragraph")
        assert part.text.endswith("word")
    assert sum(part.consumed for part in parts) == len(text)


def test_a_fence_open_at_the_split_is_closed_and_reopened() -> None:
    code = "\n".join(f"    value_{i} = compute({i})  # step {i}" for i in range(300))
    text = f"Here:\n\n```python\n{code}\n```\n\nThat is all."
    parts = split(text)
    assert len(parts) >= 3
    for index, part in enumerate(parts):
        html = to_html(part.text)
        parsed = parse_html(html)  # each part renders on its own
        assert utf16_len(parsed.text) <= MAX_UNITS
        if index > 0:
            assert part.text.startswith("```python\n")
        if index < len(parts) - 1:
            assert part.text.endswith("\n```")
            assert parts[index].fence_after is not None
    rendered = "\n".join(parse_html(to_html(p.text)).text for p in parts)
    for i in range(300):
        assert f"value_{i} = compute({i})" in rendered


def test_a_line_without_breaks_is_cut_hard() -> None:
    text = "x" * 10_000
    parts = split(text)
    assert [utf16_len(p.text) for p in parts][:-1] == [MAX_UNITS - 12] * (len(parts) - 1)
    assert "".join(p.text for p in parts) == text


def test_short_text_is_one_part() -> None:
    (part,) = split("hello")
    assert (part.text, part.consumed, part.fence_after) == ("hello", 5, None)
