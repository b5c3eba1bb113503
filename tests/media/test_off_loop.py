"""File checks never stall the event loop, and only a few run at once (issue 22 §3.4).

A check is held on an event in its thread while the test, on the daemon's own event
loop, goes on: that can only happen when the check runs off the loop. (Were it on the
loop, the hold would time out and the check record that it was never released.) The
stall itself is measured in ``bench/intake_stall.py``, never here.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from PIL import Image

from tests.fakes.anthropic_api import text_reply
from tests.media.host import USER, running_daemon
from tests.media.samples import flat_png
from tests.media.samples import pdf as pdf_of
from thalos_bot.media import documents
from thalos_bot.media.documents import read_document_off_loop
from thalos_bot.media.images import (
    MAX_DECODED_PIXELS,
    MAX_LONG_EDGE,
    prepare_image,
    prepare_image_sync,
)
from thalos_bot.media.limits import MediaRejectedError
from thalos_bot.media.pages import pdf_pages
from thalos_bot.media.work import MEDIA_WORKERS, media_limiter

pytestmark = pytest.mark.anyio

HOLD = 10.0
"""How long a held check waits for its release: only ever reached when it runs on the
event loop (then nothing can release it)."""


class Held:
    """``func`` wrapped: each call records its thread, then waits for :attr:`release`."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self._func = func
        self._entered = threading.Semaphore(0)
        self._lock = threading.Lock()
        self.release = threading.Event()
        self.threads: list[int] = []
        self.released: list[bool] = []
        self._active = 0
        self.most = 0

    def __call__(self, *args: Any) -> Any:
        with self._lock:
            self.threads.append(threading.get_ident())
            self._active += 1
            self.most = max(self.most, self._active)
        self._entered.release()
        self.released.append(self.release.wait(HOLD))
        try:
            return self._func(*args)
        finally:
            with self._lock:
                self._active -= 1

    async def entered(self, count: int = 1) -> None:
        """Wait (in a thread, not on the loop) until ``count`` calls have begun."""
        for _ in range(count):
            acquire = partial(self._entered.acquire, timeout=HOLD)
            assert await anyio.to_thread.run_sync(acquire)


async def test_a_text_file_is_checked_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = Held(documents._as_text)
    monkeypatch.setattr(documents, "_as_text", held)
    loop_thread = threading.get_ident()
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.anthropic.enqueue(text_reply("A log of a thousand lines."))
        bot.telegram.push_document(
            USER, USER, b"started\n" * 1000, file_name="app.log", mime_type="text/plain"
        )
        await held.entered()  # the loop runs this while the check is held
        held.release.set()
        await bot.shown(lambda t: "A log of a thousand lines." in t)
    assert held.released == [True], "the event loop went on while the file was checked"
    assert loop_thread not in held.threads


async def test_a_pdf_is_counted_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = Held(pdf_pages)
    monkeypatch.setattr(documents, "pdf_pages", held)
    loop_thread = threading.get_ident()
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.anthropic.enqueue(text_reply("Three blank pages."))
        bot.telegram.push_document(
            USER, USER, pdf_of(3), file_name="three.pdf", mime_type="application/pdf"
        )
        await held.entered()
        held.release.set()
        await bot.shown(lambda t: "Three blank pages." in t)
        content = bot.last_user_content()
    assert held.released == [True]
    assert loop_thread not in held.threads
    assert content[0]["type"] == "document"


async def test_one_limiter_bounds_every_kind_of_media_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held = Held(documents._as_text)
    monkeypatch.setattr(documents, "_as_text", held)
    files = MEDIA_WORKERS + 3
    small = io.BytesIO()
    Image.new("RGB", (40, 30), "red").save(small, format="PNG")
    async with anyio.create_task_group() as group:
        for n in range(files):
            check = partial(read_document_off_loop, f"{n}.txt", "text/plain", b"hi", max_chars=9)
            group.start_soon(check)
        await held.entered(MEDIA_WORKERS)
        group.start_soon(prepare_image, small.getvalue())
        await anyio.wait_all_tasks_blocked()
        statistics = media_limiter().statistics()
        assert statistics.borrowed_tokens == MEDIA_WORKERS
        assert statistics.tasks_waiting == files - MEDIA_WORKERS + 1, "the image waits too"
        held.release.set()
    assert held.most == MEDIA_WORKERS, "never more at once than the limiter allows"
    assert len(held.threads) == files
    assert held.released == [True] * files


def test_a_decompression_bomb_is_refused_before_it_is_decoded() -> None:
    bomb = flat_png(7999, 8000)  # 76 KB that would decode to 64 megapixels
    assert len(bomb) < 100_000
    with pytest.raises(MediaRejectedError) as refused:
        prepare_image_sync(bomb)
    notice = refused.value.notice
    assert "7,999 x 8,000 pixels" in notice
    assert f"at most {MAX_DECODED_PIXELS // 1_000_000}" in notice


def test_a_jpeg_over_that_size_is_decoded_reduced_and_accepted() -> None:
    out = io.BytesIO()
    Image.new("L", (7000, 5000), 90).save(out, format="JPEG")  # 35 megapixels
    prepared = prepare_image_sync(out.getvalue())
    assert (prepared.width, prepared.height) == (MAX_LONG_EDGE, 1120)
    assert prepared.media_type == "image/jpeg"


async def test_a_bomb_sent_as_a_file_gets_the_notice_and_nothing_reaches_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running_daemon(tmp_path, monkeypatch) as bot:
        bot.telegram.push_document(
            USER, USER, flat_png(7999, 8000), file_name="huge.png", mime_type="image/png"
        )
        texts = await bot.shown(lambda t: len(t) >= 1)
    assert len(texts) == 1
    assert "too large to open: 7,999 x 8,000 pixels" in texts[0]
    assert bot.anthropic.requests == []
