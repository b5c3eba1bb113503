"""Splitting long replies at 4096 UTF-16 code units: a bounded number of parts, each
valid on its own, with what is open at a cut closed and reopened."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes.telegram_html import ParsedText, parse_html, utf16_len
from tests.hypothesis_budget import examples
from thalos_bot.channels.text.split import Carry, Part
from thalos_bot_telegram.limits import MAX_UNITS, split
from thalos_bot_telegram.markdown import to_html


def rendered(part: Part) -> ParsedText:
    parsed = parse_html(to_html(part.text))  # raises if Telegram would refuse it
    assert parsed.dropped == ()
    assert utf16_len(parsed.text) <= MAX_UNITS
    return parsed


def deliver(text: str, steps: list[int] | None = None) -> list[Part]:
    """The parts a chat receives, as the view commits them: while the text grows by
    ``steps`` characters at a time, the first part is committed as soon as there is a
    second; at the end, every part."""
    sent: list[Part] = []
    offset = 0
    carry: Carry | None = None
    ends = [*_growth(len(text), steps or []), len(text)]
    for index, end in enumerate(ends):
        final = index == len(ends) - 1
        while True:
            parts = split(text[offset:end], carry)
            if len(parts) == 1 and not final:
                break
            sent.append(parts[0])
            offset += parts[0].consumed
            carry = parts[0].fence_after
            if len(parts) == 1:
                return sent
    return sent


def _growth(total: int, steps: list[int]) -> list[int]:
    ends: list[int] = []
    position = 0
    for step in steps:
        position += step
        if position >= total:
            break
        ends.append(position)
    return ends


def bound(text: str) -> int:
    return math.ceil(utf16_len(text) / 4000) + 1


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
    assert [utf16_len(p.text) for p in parts][:-1] == [MAX_UNITS - 24] * (len(parts) - 1)
    assert "".join(p.text for p in parts) == text


def test_short_text_is_one_part() -> None:
    (part,) = split("hello")
    assert (part.text, part.consumed, part.fence_after) == ("hello", 5, None)


# -- the flood: a reopened prefix must never eat the budget ------------------------------


def test_a_long_word_after_a_fence_is_not_reopened_on_every_part() -> None:
    """Was: the 4.5 KB answer below became 180 messages of 2 characters each."""
    text = "```" + "w" * 4000 + "\n" + "code line\n" * 50
    parts = deliver(text)
    assert len(parts) <= bound(text)
    for part in parts[1:]:
        assert not part.text.startswith("```w")
    for part in parts:
        rendered(part)


def test_a_very_long_fence_marker_is_reopened_short() -> None:
    code = "\n".join(f"line {i}" for i in range(2000))
    text = "`" * 40 + "python\n" + code + "\n" + "`" * 40
    parts = deliver(text)
    assert len(parts) <= bound(text)
    assert all(part.text.startswith("```python\n") for part in parts[1:])


# -- formatting that crosses a cut is closed and reopened --------------------------------


def _entities_at_edges(parts: list[Part]) -> tuple[list[str], list[str]]:
    first, second = rendered(parts[0]), rendered(parts[1])
    end = utf16_len(first.text)
    at_end = [str(e["type"]) for e in first.entities if e["offset"] + e["length"] == end]
    at_start = [str(e["type"]) for e in second.entities if e["offset"] == 0]
    return at_end, at_start


def test_bold_crossing_a_cut_is_closed_and_reopened() -> None:
    text = "intro " * 600 + "**" + ("bold words " * 200).strip() + "** and after."
    parts = split(text)
    assert len(parts) == 2
    assert _entities_at_edges(parts) == (["bold"], ["bold"])
    assert not parse_html(to_html(parts[1].text)).text.startswith("*")


def test_italic_and_inline_code_crossing_a_cut_are_closed_and_reopened() -> None:
    text = "intro " * 670 + "*see `code " + "x " * 200 + "` more* after"
    parts = split(text)
    at_end, at_start = _entities_at_edges(parts)
    assert "code" in at_end
    assert "code" in at_start
    second = rendered(parts[1])
    assert ("italic", "more") in {
        (str(e["type"]), second.text[e["offset"] : e["offset"] + e["length"]].strip())
        for e in second.entities
    }


def test_a_link_crossing_a_cut_links_its_second_half() -> None:
    text = "intro " * 670 + "[a link text " + "word " * 30 + "](https://example.org) done"
    parts = split(text)
    second = rendered(parts[1])
    assert second.entities[0]["type"] == "text_link"
    assert second.entities[0]["url"] == "https://example.org"
    assert "[" not in rendered(parts[0]).text[-200:]


def test_a_table_cut_between_rows_repeats_its_header() -> None:
    rows = "\n".join(f"| item {i} | {i * 3} |" for i in range(400))
    text = f"Inventory:\n\n| Item | Count |\n|---|---:|\n{rows}\n"
    parts = split(text)
    assert len(parts) >= 2
    for part in parts:
        lines = rendered(part).text.splitlines()
        table = lines[lines.index("Item     │ Count") :] if "Inventory:" in lines[0] else lines
        assert table[0] == "Item     │ Count"


# -- the bound holds for any text, streamed or not -------------------------------------

PIECES = st.sampled_from(
    [
        "word ",
        "longerword ",
        "\n",
        "\n\n",
        "**",
        "*",
        "_",
        "`",
        "```",
        "```python\n",
        "~~",
        "[",
        "](https://example.org/x)",
        "> ",
        "- ",
        "1. ",
        "| a | b |\n|---|---|\n",
        "| x | y |\n",
        "👍🏽",
        "😀",
        "é",
        "w" * 300,
        "<b>",
        "&amp;",
        "\\",
        " " * 8,
    ]
)
TEXTS = st.builds(
    lambda pieces, size: ("".join(pieces) * (size // len("".join(pieces)) + 1))[:size],
    st.lists(PIECES, min_size=1, max_size=60),
    st.integers(4_000, 20_000),
)


@settings(max_examples=examples(40), deadline=None)
@given(TEXTS, st.lists(st.integers(1, 3000), max_size=12))
def test_any_text_takes_at_most_the_bound_and_every_part_is_valid(
    text: str, steps: list[int]
) -> None:
    for parts in (deliver(text), deliver(text, steps)):
        assert len(parts) <= bound(text)
        for part in parts:
            assert utf16_len(part.text) <= MAX_UNITS
            rendered(part)
        assert sum(part.consumed for part in parts) == len(text)
