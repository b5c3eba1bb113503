"""Thirty-six realistic answers (tests/telegram/corpus): lists, code in several
languages, tables, links, quotes, headings, mixed emphasis, long answers, non-Latin
scripts and emoji. Each must render to HTML Telegram accepts (nested as Telegram
allows), split within the bound, and show every word of its source.

The reference for "every word" is markdown-it's own HTML renderer: the words a browser
would show, which ours must show too (modulo what Telegram forces: list numbers are
written out, a wide table repeats its headers per row).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from html import unescape
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.fakes.telegram_html import parse_html, utf16_len
from thalos_bot.channels.text.split import Carry, Part
from thalos_bot_telegram.limits import MAX_UNITS, split
from thalos_bot_telegram.markdown import to_html

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.md"))
_REFERENCE = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
_WORD = re.compile(r"\w+")
_BLOCK_TAG = re.compile(
    r"</?(?:p|li|ul|ol|h\d|pre|blockquote|table|thead|tbody|tr|th|td|hr|br)\b[^>]*>"
)


def test_the_corpus_has_36_answers() -> None:
    assert len(CORPUS) == 36


def words(text: str) -> Counter[str]:
    return Counter(word.casefold() for word in _WORD.findall(text))


def reference(source: str) -> tuple[str, set[str]]:
    """The text markdown-it's HTML shows, and the words of its table headers."""
    html = _REFERENCE.render(source)
    html = re.sub(r'<img src="[^"]*" alt="([^"]*)"[^>]*>', r"\1", html)
    html = re.sub(r"<li>\s*(?:<p>)?\[[ xX]\] ", "<li>", html)
    headers = set(words(unescape(" ".join(re.findall(r"<th[^>]*>(.*?)</th>", html)))))
    text = re.sub(r"<[^>]+>", "", _BLOCK_TAG.sub("\n", html))
    return unescape(text), headers


def shown(source: str) -> str:
    parsed = parse_html(to_html(source))
    assert parsed.dropped == (), "an entity Telegram would drop"
    return parsed.text


def assert_same_words(ours: Counter[str], reference: Counter[str], headers: set[str]) -> None:
    missing = reference - ours
    extra = ours - reference
    assert set(missing) <= headers, f"words lost: {sorted(missing)}"
    assert all(word.isdigit() or word in headers for word in extra), f"added: {sorted(extra)}"


def deliver(text: str) -> list[Part]:
    sent: list[Part] = []
    carry: Carry | None = None
    offset = 0
    while True:
        parts = split(text[offset:], carry)
        sent.append(parts[0])
        if len(parts) == 1:
            return sent
        offset += parts[0].consumed
        carry = parts[0].fence_after


@pytest.mark.parametrize("path", CORPUS, ids=[path.stem for path in CORPUS])
def test_an_answer_renders_valid_and_shows_every_word(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    text = shown(source)
    assert utf16_len(text) <= utf16_len(source)
    expected, headers = reference(source)
    assert_same_words(words(text), words(expected), headers)
    for marker in ("**", "](", "```", "&lt;", "&amp;", "!["):
        assert text.count(marker) <= expected.count(marker), f"{marker!r} shown literally"


@pytest.mark.parametrize("path", CORPUS, ids=[path.stem for path in CORPUS])
def test_an_answer_splits_within_the_bound(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    parts = deliver(source)
    assert len(parts) <= math.ceil(utf16_len(source) / 4000) + 1
    for part in parts:
        assert utf16_len(shown(part.text)) <= MAX_UNITS


def test_the_whole_corpus_as_one_long_answer_splits_and_keeps_every_word() -> None:
    source = "\n\n".join(path.read_text(encoding="utf-8") for path in CORPUS)
    assert utf16_len(source) > 25_000
    parts = deliver(source)
    assert len(parts) <= math.ceil(utf16_len(source) / 4000) + 1
    ours: Counter[str] = Counter()
    for part in parts:
        text = shown(part.text)
        assert utf16_len(text) <= MAX_UNITS
        ours += words(text)
    expected, headers = reference(source)
    assert_same_words(ours, words(expected), headers)
