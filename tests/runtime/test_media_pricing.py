"""What a context plan counts for media is what the API charges: a PDF by its pages
(a per-page figure, whatever the file's bytes), an image by its pixels."""

from __future__ import annotations

import pytest

from tests.media.samples import pdf, png
from thalos_bot.domain.attachments import Attachment, Reattach
from thalos_bot.domain.messages import (
    Block,
    DocumentBlock,
    ImageBlock,
    Message,
    message_from_json,
    message_to_json,
)
from thalos_bot.media.store import MemoryMediaStore
from thalos_bot.media.view import PDF_PAGE_TOKENS, image_tokens, media_chars
from thalos_bot.runtime.compaction import CHARS_PER_TOKEN, message_chars
from thalos_bot.runtime.media import user_content

pytestmark = pytest.mark.anyio


async def blocks(
    *items: Attachment | Reattach, store: MemoryMediaStore | None = None
) -> list[Block]:
    return list(await user_content("", items, store or MemoryMediaStore()))


async def test_a_pdf_is_priced_by_its_pages_not_its_bytes() -> None:
    thin = pdf(60)  # sixty pages of a few bytes each
    scan = pdf(1, padding=2_000_000)  # one page, 2 MB
    [long_doc] = await blocks(Attachment("pdf", "application/pdf", thin, "notes.pdf"))
    [one_page] = await blocks(Attachment("pdf", "application/pdf", scan, "scan.pdf"))
    assert isinstance(long_doc, DocumentBlock)
    assert isinstance(one_page, DocumentBlock)
    assert (long_doc.pages, one_page.pages) == (60, 1)
    assert len(thin) < 20_000 < 2_000_000 < len(scan)
    assert media_chars(long_doc) == 60 * PDF_PAGE_TOKENS * CHARS_PER_TOKEN
    assert media_chars(one_page) == PDF_PAGE_TOKENS * CHARS_PER_TOKEN
    # Sixty pages fill most of a 200k window; the planner sees that from the history.
    planned = message_chars(Message("user", (long_doc,))) // CHARS_PER_TOKEN
    assert planned > 150_000


async def test_an_image_is_priced_by_its_pixels() -> None:
    [small] = await blocks(Attachment("image", "image/png", png(200, 100)))
    [large] = await blocks(Attachment("image", "image/png", png(4000, 3000)))
    assert isinstance(small, ImageBlock)
    assert isinstance(large, ImageBlock)
    assert (small.width, small.height) == (200, 100)
    assert max(large.width, large.height) == 1568  # made ready: scaled as the API would
    assert media_chars(small) == 27 * CHARS_PER_TOKEN  # 200 x 100 / 750, rounded up
    assert media_chars(large) == 1600 * CHARS_PER_TOKEN  # the most an image costs
    assert image_tokens(1568, 1568) == 1600
    assert image_tokens(3136, 100) == image_tokens(1568, 50)


async def test_a_reattached_file_is_measured_from_the_store() -> None:
    store = MemoryMediaStore()
    await blocks(Attachment("pdf", "application/pdf", pdf(7), "a.pdf", origin="f:1"), store=store)
    await blocks(Attachment("image", "image/png", png(300, 150), origin="f:2"), store=store)
    document, image = await blocks(Reattach("f:1"), Reattach("f:2"), store=store)
    assert isinstance(document, DocumentBlock)
    assert isinstance(image, ImageBlock)
    assert document.pages == 7
    assert (image.width, image.height) == (300, 150)


def test_pages_and_pixels_are_kept_in_the_history_and_old_rows_still_load() -> None:
    message = Message(
        "user",
        (DocumentBlock("d", size=10, name="a.pdf", pages=3), ImageBlock("i", "image/png", 5, 8, 6)),
    )
    assert message_from_json(message_to_json(message)) == message
    old = (
        '{"role":"user","content":[{"type":"document","media_hash":"d",'
        '"media_type":"application/pdf","size":40000,"name":"a.pdf"}]}'
    )
    [legacy] = message_from_json(old).content
    assert isinstance(legacy, DocumentBlock)
    assert legacy.pages == 0
    assert media_chars(legacy) > 0  # priced by the old rough figure: the pages are unknown
