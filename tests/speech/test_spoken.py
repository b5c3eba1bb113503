"""What of an answer is read aloud, and the clips it is read in."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
from thalos_bot.speech.spoken import CODE_SENTENCE, TABLE_SENTENCE, clips, spoken_text


def test_code_blocks_are_not_read_and_said_once() -> None:
    answer = (
        "Run this:\n\n```bash\npip install thing\n```\n\nOr this:\n\n~~~python\nimport os\n~~~\n\n"
        "    indented = 'code'\n\nDone."
    )
    said = spoken_text(answer)
    assert said == f"Run this. {CODE_SENTENCE} Or this. Done."
    for code in ("pip", "import", "indented"):
        assert code not in said


def test_links_are_read_by_their_text_and_urls_not_at_all() -> None:
    answer = (
        "See [the guide](https://example.com/guide) or https://example.com/raw, "
        "<https://example.com/auto> and www.example.org too."
    )
    said = spoken_text(answer)
    assert "example" not in said
    assert said.startswith("See the guide or")
    assert said.endswith("too.")


def test_tables_are_not_read() -> None:
    answer = "Prices:\n\n| fruit | price |\n|---|---|\n| apple | 3 |\n\nThat is all."
    said = spoken_text(answer)
    assert said == f"Prices. {TABLE_SENTENCE} That is all."
    assert "apple" not in said


def test_markdown_marks_are_dropped_and_blocks_end_as_sentences() -> None:
    answer = (
        "# A **bold** title\n\n- first *item*\n- second `thing`!\n\n> quoted ~~not~~ text\n\n"
        "![a picture](pic.png) Bye"
    )
    said = spoken_text(answer)
    assert said == "A bold title. first item. second thing! quoted not text. Bye."
    assert not re.search(r"[*#`~>]", said)


def test_an_answer_of_only_code_says_where_the_code_is() -> None:
    assert spoken_text("```\nx = 1\n```") == CODE_SENTENCE
    assert spoken_text("") == ""


def test_clips_split_at_sentence_ends_first() -> None:
    text = "One two three. Four five six. Seven eight nine."
    assert clips(text, 30) == ["One two three. Four five six.", "Seven eight nine."]
    assert clips(text, 1000) == [text]
    assert clips("   ", 10) == []


def test_a_long_sentence_is_split_at_commas_then_between_words() -> None:
    sentence = "alpha beta gamma, delta epsilon zeta, eta theta iota kappa lambda mu nu."
    pieces = clips(sentence, 20)
    assert pieces[0] == "alpha beta gamma,"
    assert all(len(piece) <= 20 for piece in pieces)
    assert " ".join(pieces) == sentence
    words = set(sentence.split())
    assert all(word in words for piece in pieces for word in piece.split())


_WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=12)
_MARK = st.sampled_from(["", "", "", ",", ".", "!", "?", ";", ":", ".)", "…"])
_TEXT = st.lists(st.tuples(_WORD, _MARK), max_size=200).map(
    lambda words: " ".join(word + mark for word, mark in words)
)


@hypothesis_settings(max_examples=examples(200), deadline=None, database=None)
@given(text=_TEXT, limit=st.integers(min_value=14, max_value=400))
def test_clips_never_exceed_the_limit_nor_cut_a_word(text: str, limit: int) -> None:
    pieces = clips(text, limit)
    assert all(0 < len(piece) <= limit for piece in pieces)
    assert " ".join(pieces) == " ".join(text.split()), "nothing lost, nothing added"
    assert [w for piece in pieces for w in piece.split()] == text.split(), "no word cut"


@hypothesis_settings(max_examples=examples(100), deadline=None, database=None)
@given(text=st.text(max_size=600), limit=st.integers(min_value=1, max_value=200))
def test_clips_of_any_text_fit(text: str, limit: int) -> None:
    pieces = clips(text, limit)
    assert all(0 < len(piece) <= limit for piece in pieces)
    assert "".join(pieces).replace(" ", "") == "".join(text.split())


@hypothesis_settings(max_examples=examples(100), deadline=None, database=None)
@given(text=st.text(max_size=400))
def test_spoken_text_of_any_markdown_is_one_line(text: str) -> None:
    said = spoken_text(text)
    assert "\n" not in said
    assert said == said.strip()
