"""The UIDs read from a UID SEARCH as aioimaplib hands it over (the ``* SEARCH`` word
already taken off): one UID alone, several, none."""

from __future__ import annotations

import aioimaplib
import pytest

from thalos_bot_email.mailbox import Mailbox, _uids


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


class _Client:
    """What :meth:`Mailbox.uids_after` asks of aioimaplib: a UID SEARCH's answer."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines

    async def uid_search(self, *criteria: str, charset: str | None) -> aioimaplib.Response:
        return aioimaplib.Response("OK", [*self.lines, b"Search completed."])


def _changed(box: Mailbox) -> bool:
    return box.changed


@pytest.mark.anyio
async def test_mails_found_are_searched_after_before_an_idle() -> None:
    """A mail's arrival the server reports while the found mails are fetched is dropped
    by aioimaplib (FETCH is asynchronous there) and not reported again at IDLE: after a
    search that found mails, the next wait returns at once so the folder is searched
    again (the restart contract case's flake)."""
    client = _Client([b"5"])
    box = Mailbox(client)
    assert await box.uids_after(4) == [5]
    assert _changed(box)
    client.lines = [b""]
    assert await box.uids_after(5) == []
    assert not _changed(box)
    client.lines = [b"6 EXISTS", b""]
    assert await box.uids_after(5) == []
    assert _changed(box), "an EXISTS in the search's own answer"
