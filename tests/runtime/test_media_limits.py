"""Media the real API refuses for its size never reaches it, and a history that holds
such media (stored before these limits were checked) is sent in a shape it takes, so
the session keeps answering instead of being refused on every later turn.

Everything runs over the real SDK, the strict fake (which refuses an image over 8000 px,
over 2000 px among more than 20 images, PDFs over 100 pages, pages plus images over 100
and a body over 32 MB) and SQLite; a refused request fails the test.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from structlog.testing import capture_logs

from tests.fakes.anthropic_api import AnthropicFake, RecordedRequest, text_reply
from tests.media.host import jpeg
from tests.media.samples import pdf
from tests.runtime.conftest import ALICE
from tests.runtime.strict import daemon, store_raw
from thalos_bot.domain.attachments import Attachment
from thalos_bot.domain.events import TurnCompleted
from thalos_bot.domain.messages import Block, DocumentBlock, ImageBlock, Message, TextBlock
from thalos_bot.media.store import MemoryMediaStore
from thalos_bot.runtime.compaction import CompactionPolicy
from thalos_bot.runtime.protocol import TurnRequest

pytestmark = pytest.mark.anyio

KEEP_ALL_MEDIA = CompactionPolicy(keep_media_turns=20)


def sent_blocks(request: RecordedRequest, kind: str) -> list[dict[str, Any]]:
    return [
        block
        for message in request.body["messages"]
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == kind
    ]


def sent_sides(request: RecordedRequest) -> list[int]:
    """The long side of every image the request carries."""
    sides = []
    for block in sent_blocks(request, "image"):
        with Image.open(io.BytesIO(base64.b64decode(block["source"]["data"]))) as image:
            sides.append(max(image.size))
    return sides


def sent_text(request: RecordedRequest) -> str:
    return "\n".join(block["text"] for block in sent_blocks(request, "text"))


def large(n: int, width: int = 2100, height: int = 1200) -> bytes:
    """A distinct large photo (each its own hash)."""
    return jpeg(width, height, (n * 7 % 256, n * 13 % 256, 90))


async def test_a_9000_px_photo_is_scaled_before_it_is_stored_and_sent(tmp_path: Path) -> None:
    store = MemoryMediaStore()
    with AnthropicFake() as fake:
        fake.enqueue(text_reply("A very wide picture."), text_reply("Still here."))
        async with daemon(tmp_path / "t.db", fake, media=store) as runtime:
            session = await runtime.create_session("helper", ALICE)
            photo = Attachment("image", "image/jpeg", jpeg(9000, 600))
            first = await runtime.run_turn(
                TurnRequest(session.id, ALICE, "what is it?", attachments=(photo,))
            )
            second = await runtime.run_turn(TurnRequest(session.id, ALICE, "and now?"))
    assert isinstance(first.terminal, TurnCompleted), first.terminal
    assert isinstance(second.terminal, TurnCompleted), second.terminal
    assert sent_sides(fake.requests[0]) == [1568]
    assert sent_sides(fake.requests[1]) == [1568], "the next turn carries it, scaled"


async def test_more_than_20_large_photos_across_turns_are_all_sent_within_2000_px(
    tmp_path: Path,
) -> None:
    with AnthropicFake() as fake:
        fake.enqueue(*[text_reply(f"Seen batch {n}.") for n in range(3)])
        async with daemon(tmp_path / "t.db", fake, compaction=KEEP_ALL_MEDIA) as runtime:
            session = await runtime.create_session("helper", ALICE)
            results = []
            for batch in range(3):
                photos = tuple(
                    Attachment("image", "image/jpeg", large(batch * 8 + n)) for n in range(8)
                )
                request = TurnRequest(session.id, ALICE, f"batch {batch}", attachments=photos)
                results.append(await runtime.run_turn(request))
    assert all(isinstance(r.terminal, TurnCompleted) for r in results), results
    sides = sent_sides(fake.requests[-1])
    assert len(sides) == 24, "every photo is still shown"
    assert max(sides) <= 2000


async def test_a_101_page_pdf_never_enters_the_history_and_the_turn_still_answers(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.db"
    with AnthropicFake() as fake:
        fake.enqueue(text_reply("That book is too long for me."), text_reply("Sure."))
        async with daemon(path, fake) as runtime:
            session = await runtime.create_session("helper", ALICE)
            book = Attachment("pdf", "application/pdf", pdf(101), name="book.pdf")
            first = await runtime.run_turn(
                TurnRequest(session.id, ALICE, "summarize", attachments=(book,))
            )
            second = await runtime.run_turn(TurnRequest(session.id, ALICE, "ok, chapter 1?"))
            history = await runtime.store.history(session.id)
    assert isinstance(first.terminal, TurnCompleted), first.terminal
    assert isinstance(second.terminal, TurnCompleted), second.terminal
    assert not sent_blocks(fake.requests[0], "document")
    assert (
        "[“book.pdf” was not attached. That PDF has 101 pages; the model reads at most 100 "
        "pages at a time." in sent_text(fake.requests[0])
    )
    assert not any(isinstance(b, DocumentBlock) for m in history for b in m.content)


async def _stored(store: MemoryMediaStore, *turns: Sequence[tuple[str, bytes]]) -> list[Message]:
    """A history of one user message per turn holding the given media (put in the store
    as they are, unchecked, as an older version did), each answered."""
    messages: list[Message] = []
    for number, media in enumerate(turns):
        blocks: list[Block] = []
        for kind, data in media:
            digest = await store.put(data, kind, kind="image" if kind != "pdf" else "pdf")
            if kind == "pdf":
                blocks.append(DocumentBlock(digest, "application/pdf", len(data), f"{number}.pdf"))
            else:
                blocks.append(ImageBlock(digest, kind, len(data)))
        blocks.append(TextBlock(f"turn {number}"))
        messages += [Message("user", tuple(blocks)), Message("assistant", (TextBlock("Seen."),))]
    return messages


async def test_a_stored_history_with_media_over_the_limits_heals_on_the_next_turn(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.db"
    store = MemoryMediaStore()
    huge = [("image/jpeg", jpeg(9000, 600))]
    book = [("pdf", pdf(101))]
    batches = [[("image/jpeg", large(b * 8 + n)) for n in range(8)] for b in range(3)]
    history = await _stored(store, huge, book, *batches)
    with AnthropicFake() as fake:
        async with daemon(path, fake, media=store) as runtime:
            session = await runtime.create_session("helper", ALICE)
        await store_raw(path, session.id, history)
        fake.enqueue(text_reply("Welcome back."), text_reply("Still fine."))
        with capture_logs() as logs:
            async with daemon(path, fake, media=store, compaction=KEEP_ALL_MEDIA) as runtime:
                first = await runtime.run_turn(TurnRequest(session.id, ALICE, "I'm back"))
                second = await runtime.run_turn(TurnRequest(session.id, ALICE, "and again"))
                kept = await runtime.store.history(session.id)
    assert isinstance(first.terminal, TurnCompleted), first.terminal
    assert isinstance(second.terminal, TurnCompleted), second.terminal
    for request in fake.requests:
        sides = sent_sides(request)
        assert len(sides) == 25, "every image is still shown"
        assert max(sides) <= 2000
        assert not sent_blocks(request, "document")
        assert "[A PDF “1.pdf” of 101 pages, not shown" in sent_text(request)
    fitted = [e for e in logs if e["event"] == "request_media_fitted"]
    assert len(fitted) == 2, "logged once a turn"
    assert fitted[0]["images_made_ready"] == 25
    assert fitted[0]["pdfs_over_page_limit"] == 1
    assert kept[: len(history)] == history, "what is stored is not rewritten"


async def test_a_stored_history_over_100_pages_or_32_mb_sends_the_newest_media(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.db"
    store = MemoryMediaStore()
    padded = 12_500_000  # about 16.7 MB each once base64: two are over 32 MB
    history = await _stored(
        store,
        [("pdf", pdf(10, padding=padded))],
        [("pdf", pdf(10, padding=padded))],
        [("pdf", pdf(40))],
        [("pdf", pdf(40))],
        [("pdf", pdf(40))],
    )
    with AnthropicFake() as fake:
        async with daemon(path, fake, media=store) as runtime:
            session = await runtime.create_session("helper", ALICE)
        await store_raw(path, session.id, history)
        fake.enqueue(text_reply("Welcome back."))
        # A window so large that compaction (which prices a PDF by its bytes) keeps all.
        wide = 100_000_000
        async with daemon(
            path, fake, media=store, compaction=KEEP_ALL_MEDIA, context_window=wide
        ) as runtime:
            result = await runtime.run_turn(TurnRequest(session.id, ALICE, "I'm back"))
    assert isinstance(result.terminal, TurnCompleted), result.terminal
    [request] = fake.requests
    assert request.size < 32_000_000
    documents = sent_blocks(request, "document")
    # Newest first: 4 and 3 (80 pages); 2 would make 120 pages; 1 fits (90 pages, 17 MB);
    # 0 would make 100 pages but 33 MB.
    assert [d["title"] for d in documents] == ["1.pdf", "3.pdf", "4.pdf"]
    notes = sent_text(request).count("[A PDF not shown: this request already holds as much")
    assert notes == 2
