"""Files a message brought with it, held until the intake fetches them: each once,
refused over the limit with the transport's notice, the oldest let go past the bound."""

from __future__ import annotations

import pytest

from thalos_bot.channels.intake.held import GONE, HELD, HeldFiles
from thalos_bot.media.limits import MediaRejectedError

pytestmark = pytest.mark.anyio

TOO_BIG = "{name} is over {mb} MB"


async def test_a_held_file_is_fetched_once() -> None:
    files = HeldFiles(1024, TOO_BIG)
    file = files.hold(b"hello", "a.txt", "text/plain", "test:1")
    assert (file.kind, file.size, file.name, file.origin) == ("document", 5, "a.txt", "test:1")
    assert await files.fetch(file) == b"hello"
    with pytest.raises(MediaRejectedError) as gone:
        await files.fetch(file)
    assert gone.value.notice == GONE
    svg = files.hold(b"<svg/>", "a.svg", "image/svg+xml", "test:3")
    assert svg.kind == "document", "read by what it is: an SVG is text, whatever it claims"


async def test_audio_is_to_be_transcribed_and_a_file_over_the_limit_is_said_so() -> None:
    files = HeldFiles(2 * 1024 * 1024, TOO_BIG)
    clip = files.hold(b"x" * (3 * 1024 * 1024), "note.ogg", "Audio/Ogg", "test:2")
    assert clip.kind == "audio"
    with pytest.raises(MediaRejectedError) as refused:
        await files.fetch(clip)
    assert refused.value.notice == "note.ogg is over 2 MB"


async def test_only_the_latest_files_are_held() -> None:
    files = HeldFiles(1024, TOO_BIG)
    first = files.hold(b"1", "one", None, "test:one")
    later = [files.hold(b"n", f"n{n}", None, f"test:{n}") for n in range(HELD)]
    with pytest.raises(MediaRejectedError):
        await files.fetch(first)
    assert await files.fetch(later[0]) == b"n"
