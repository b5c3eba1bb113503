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
