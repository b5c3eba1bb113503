"""Code for clients that end a block at the first three backticks anywhere (Discord,
Slack): none are left in a row, and dropping the zero-width spaces gives it back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from thalos_bot.channels.text.fences import BREAK, unclosing


@given(st.text(alphabet="`a\n ~", max_size=60))
def test_no_three_backticks_remain_and_the_text_reads_the_same(code: str) -> None:
    safe = unclosing(code)
    assert "```" not in safe
    assert safe.replace(BREAK, "") == code


def test_fewer_than_three_are_left_alone() -> None:
    assert unclosing("`a` and ``b``") == "`a` and ``b``"
