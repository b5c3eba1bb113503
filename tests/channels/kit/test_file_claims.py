"""A file as a platform's event claims it (:meth:`RemoteFile.claimed`): a claim of the
wrong type is unknown, never taken for something it is not; a claimed size over the
transport's :class:`FetchLimit` is refused before any fetch."""

from __future__ import annotations

from dataclasses import replace

import pytest

from thalos_bot.channels.intake.files import FetchLimit, RemoteFile
from thalos_bot.media.limits import MediaRejectedError


def test_a_size_or_type_of_another_kind_is_unknown() -> None:
    file = RemoteFile.claimed("u", "x:1", "a.bin", size=True, mime=7)
    assert (file.size, file.mime_type, file.kind) == (None, None, "document")


def test_audio_is_transcribed_its_type_without_parameters() -> None:
    file = RemoteFile.claimed("u", "x:2", "a.ogg", size=12, mime="Audio/OGG; codecs=opus")
    assert (file.size, file.mime_type, file.kind) == (12, "Audio/OGG", "audio")
    voice = RemoteFile.claimed("u", "x:3", "voice.ogg", size=None, mime="", voice=True)
    assert (voice.mime_type, voice.kind) == (None, "voice")


def test_a_claimed_size_over_the_limit_is_refused_before_any_fetch() -> None:
    limit = FetchLimit(20 * 1024 * 1024, "Slack")
    over = RemoteFile.claimed("u", "x:4", "a.pdf", size=limit.most + 1, mime="application/pdf")
    with pytest.raises(MediaRejectedError) as refused:
        limit.claim(over)
    assert refused.value.notice == limit.too_big
    assert "20 MB" in limit.too_big
    assert "Slack" in limit.too_big
    limit.claim(replace(over, size=limit.most))  # at the limit: fetched
    limit.claim(replace(over, size=None))  # unknown: the fetch itself is bounded


def test_a_failed_fetch_says_whether_it_was_the_size() -> None:
    limit = FetchLimit(25 * 1024 * 1024, "Discord")
    assert limit.refusal(too_big=True).notice == limit.too_big
    assert limit.refusal(too_big=False).notice == limit.not_downloaded
    assert "from Discord" in limit.not_downloaded


def test_a_platforms_own_limit_is_said_to_be_the_platforms() -> None:
    """Telegram lets a bot download 20 MB at most: the person is told so, not that the
    bot chose it (no setting of ours lifts it)."""
    telegram = FetchLimit(20 * 1024 * 1024, "Telegram", ours=False)
    assert "20 MB, the most a bot can download from Telegram." in telegram.too_big
    assert "the most I take from Slack." in FetchLimit(20 * 1024 * 1024, "Slack").too_big
