"""Files a message brought with it, held until the intake fetches them: each once,
refused over the limit with the transport's notice (their bytes not kept), never let go
unfetched before their message is finished, and no more held than the bound (the next
message waits for room)."""

from __future__ import annotations

import anyio
import pytest

from thalos_bot.channels.intake.held import GONE, HELD, HeldFiles
from thalos_bot.media.limits import MediaRejectedError

pytestmark = pytest.mark.anyio


def too_big(name: str, mb: str) -> str:
    return f"{name} is over {mb} MB {{as said}}"


async def test_a_held_file_is_fetched_once() -> None:
    files = HeldFiles(1024, too_big)
    file = files.hold(b"hello", "a.txt", "text/plain", "test:1")
    assert (file.kind, file.size, file.name, file.origin) == ("document", 5, "a.txt", "test:1")
    assert await files.fetch(file) == b"hello"
    with pytest.raises(MediaRejectedError) as gone:
        await files.fetch(file)
    assert gone.value.notice == GONE
    svg = files.hold(b"<svg/>", "a.svg", "image/svg+xml", "test:3")
    assert svg.kind == "document", "read by what it is: an SVG is text, whatever it claims"


async def test_a_file_over_the_limit_is_said_so_and_its_bytes_not_kept() -> None:
    files = HeldFiles(2 * 1024 * 1024, too_big)
    clip = files.hold(b"x" * (3 * 1024 * 1024), "note.ogg", "Audio/Ogg", "test:2")
    assert (clip.kind, clip.size) == ("audio", 3 * 1024 * 1024)
    assert files.bytes == 0
    with pytest.raises(MediaRejectedError) as refused:
        await files.fetch(clip)
    assert refused.value.notice == "note.ogg is over 2 MB {as said}", "a brace is only text"


async def test_no_file_waiting_is_let_go_and_the_next_message_waits_for_room() -> None:
    files = HeldFiles(1024, too_big)
    first = files.hold(b"1", "one", None, "test:one")
    later = [files.hold(b"n", f"n{n}", None, f"test:{n}") for n in range(HELD)]
    assert await files.fetch(first) == b"1", "more than the bound: none of them let go"
    assert await files.fetch(later[0]) == b"n"
    files.release(later[1:])  # their message was refused part-way: finished
    assert files.bytes == 0
    with pytest.raises(MediaRejectedError):
        await files.fetch(later[1])


async def test_room_waits_until_files_are_fetched_or_released() -> None:
    files = HeldFiles(1024, too_big, most_bytes=1000)
    held = [files.hold(b"x" * 400, f"f{n}", None, f"test:{n}") for n in range(2)]
    await files.room([200])  # it fits
    await files.room([2000])  # over the limit: its bytes will not be kept
    roomy = anyio.Event()

    async def wait_for(sizes: list[int]) -> None:
        await files.room(sizes)
        roomy.set()

    async with anyio.create_task_group() as group:
        group.start_soon(wait_for, [300])
        await anyio.wait_all_tasks_blocked()
        assert not roomy.is_set(), "800 held and 300 more are over the 1000"
        await files.fetch(held[0])
        await roomy.wait()
    roomy = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(wait_for, [1] * HELD)
        await anyio.wait_all_tasks_blocked()
        assert not roomy.is_set(), "one held and as many as the bound more"
        files.release(held)
        await roomy.wait()
    await files.room([5000] * (HELD + 1))  # nothing held: one message always gets in
