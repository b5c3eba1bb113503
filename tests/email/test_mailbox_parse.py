"""The UIDs read from a UID SEARCH as aioimaplib hands it over (the ``* SEARCH`` word
already taken off): one UID alone, several, none."""

from __future__ import annotations

import asyncio

import aioimaplib
import pytest

from tests.email.world import World
from thalos_bot_email.mailbox import Mailbox, _Protocol, _uids


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
        self.protocol = _Protocol(asyncio.get_running_loop(), None)

    async def uid_search(self, *criteria: str, charset: str | None) -> aioimaplib.Response:
        return aioimaplib.Response("OK", [*self.lines, b"Search completed."])


def _changed(box: Mailbox) -> bool:
    return box.changed


@pytest.mark.anyio
async def test_a_new_mail_reported_during_a_fetch_makes_the_next_wait_search_again() -> None:
    """aioimaplib drops a ``* n EXISTS`` that comes during a FETCH or a SEARCH (they are
    asynchronous there) and the server does not report that mail again at IDLE: the
    protocol notes it, so the wait after returns at once and the folder is searched
    again (the restart contract case's flake)."""
    client = _Client([b"5"])
    box = Mailbox(client, 60.0)
    assert await box.uids_after(4) == [5]
    assert not _changed(box)
    client.protocol._untagged_response(b"* 6 EXISTS")  # while mail 5 is fetched
    assert _changed(box)
    client.lines = [b"6"]
    assert await box.uids_after(5) == [6]
    assert not _changed(box), "a search begun after the report covers it"


@pytest.mark.anyio
@pytest.mark.slow
async def test_on_dovecot_a_report_of_new_mail_is_noted_whatever_it_comes_with(
    world: World,
) -> None:
    """The connection :meth:`Mailbox.login` makes speaks through the protocol above, so
    a ``* n EXISTS`` that comes with any command (here a NOOP) is noted."""
    box = await Mailbox.login(world.config(), world.password)
    try:
        await box.select("INBOX")
        assert await box.uids_after(0) == []
        assert not _changed(box)
        await world.say("new while the bot was busy")
        await box.noop()
        assert _changed(box)
    finally:
        await box.close()
