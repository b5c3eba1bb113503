"""The UIDs read from a UID SEARCH as aioimaplib hands it over (the ``* SEARCH`` word
already taken off): one UID alone, several, none."""

from __future__ import annotations

import aioimaplib

from thalos_bot_email.mailbox import _uids


def _search(first: bytes) -> aioimaplib.Response:
    return aioimaplib.Response("OK", [first, b"Search completed (0.001 + 0.000 secs)."])


def test_one_uid_alone_is_found() -> None:
    assert _uids(_search(b"1")) == [1]


def test_several_and_none() -> None:
    assert _uids(_search(b"3 7 12")) == [3, 7, 12]
    assert _uids(_search(b"")) == []
    assert _uids(aioimaplib.Response("OK", [])) == []


def test_a_search_word_left_in_is_skipped() -> None:
    assert _uids(_search(b"SEARCH 4 5")) == [4, 5]


def test_news_before_the_result_is_not_taken_for_it() -> None:
    news = aioimaplib.Response("OK", [b"4 EXISTS", b"1 RECENT", b"2 3 4", b"Search completed."])
    assert _uids(news) == [2, 3, 4]
    assert _uids(aioimaplib.Response("OK", [b"4 EXISTS", b"", b"Search completed."])) == []
