"""Fitting a request's media to the API's limits, checked against the strict fake's
rules on the request the real mapping builds."""

from __future__ import annotations

from tests.fakes.anthropic_rules import check_request
from tests.media.samples import pdf, png
from thalos_bot.domain.messages import Block, DocumentBlock, ImageBlock, Message, TextBlock
from thalos_bot.media.fit import MediaFacts, fit_request
from thalos_bot.media.store import StoredMedia, media_hash
from thalos_bot.providers.anthropic_mapping import message_params


def stored(data: bytes, media_type: str) -> StoredMedia:
    return StoredMedia(media_hash(data), media_type, data)


def ask(*blocks: Block) -> list[Message]:
    return [Message("user", (*blocks, TextBlock("what are these?")))]


def accepted(messages: list[Message], media: dict[str, StoredMedia]) -> str | None:
    params = message_params(messages, media)
    return check_request({"model": "m", "max_tokens": 8, "messages": params})


def test_101_small_images_keep_the_newest_100() -> None:
    items = [stored(png(4, 4, shade), "image/png") for shade in range(101)]
    media = {item.hash: item for item in items}
    messages = ask(*[ImageBlock(item.hash, "image/png", item.size) for item in items])
    assert accepted(messages, media) == "too many images and documents: 101 + 0 > 100"
    fit = fit_request(messages, media, facts=MediaFacts())
    assert accepted(fit.messages, fit.media) is None
    assert fit.fixes == {"media_over_budget": 1}
    first = fit.messages[0].content[0]
    assert isinstance(first, TextBlock), "the oldest gives way"
    assert first.text.startswith("[An image not shown: this request already holds")


def test_the_same_large_image_twice_is_made_ready_once_and_sent_twice() -> None:
    big = stored(png(2500, 10), "image/png")
    small = [stored(png(4, 4, shade), "image/png") for shade in range(20)]
    media = {item.hash: item for item in (big, *small)}
    blocks = [ImageBlock(big.hash, "image/png", big.size)] * 2
    messages = ask(*blocks, *[ImageBlock(s.hash, "image/png", s.size) for s in small])
    assert "for many-image requests: 2000 pixels" in (accepted(messages, media) or "")
    fit = fit_request(messages, media, facts=MediaFacts())
    assert accepted(fit.messages, fit.media) is None
    assert fit.fixes == {"images_made_ready": 1}
    assert fit.messages == messages, "nothing is replaced, only the bytes sent"


def test_an_image_that_cannot_be_read_and_a_pdf_over_100_pages_become_notes() -> None:
    broken = stored(b"\x89PNG but not really", "image/png")
    book = stored(pdf(120), "application/pdf")
    media = {broken.hash: broken, book.hash: book}
    messages = ask(
        ImageBlock(broken.hash, "image/png", broken.size),
        DocumentBlock(book.hash, size=book.size, name="book.pdf"),
    )
    fit = fit_request(messages, media, facts=MediaFacts())
    assert fit.fixes == {"unreadable_images": 1, "pdfs_over_page_limit": 1}
    assert fit.messages[0].content[:2] == (
        TextBlock("[An image that could not be read, not shown.]"),
        TextBlock(
            "[A PDF “book.pdf” of 120 pages, not shown: the model reads at most 100 pages "
            "at a time.]"
        ),
    )
    assert accepted(fit.messages, fit.media) is None


def test_a_request_within_the_limits_is_left_as_it_is() -> None:
    photo = stored(png(1568, 900), "image/png")
    messages = ask(ImageBlock(photo.hash, "image/png", photo.size))
    fit = fit_request(messages, {photo.hash: photo}, facts=MediaFacts())
    assert (fit.messages, fit.media, fit.fixes) == (messages, {photo.hash: photo}, {})
