"""The strict fake refuses media the real API refuses for its size, with the API's
wording: an image over 8000 px, over 2000 px in a request of more than 20 images, PDFs of
more than 100 pages, pages plus images over 100, and a body over 32 MB (a 413)."""

from __future__ import annotations

import base64
from typing import Any

import anthropic
import pytest

from tests.fakes.anthropic_api import AnthropicFake, text_reply
from tests.fakes.anthropic_rules import check_request, check_size
from tests.media.samples import pdf, png


def image(data: bytes) -> dict[str, Any]:
    source = {"type": "base64", "media_type": "image/png", "data": base64.b64encode(data).decode()}
    return {"type": "image", "source": source}


def document(data: bytes) -> dict[str, Any]:
    encoded = base64.b64encode(data).decode()
    return {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": encoded},
    }


def body(*content: dict[str, Any]) -> dict[str, Any]:
    messages = [{"role": "user", "content": [*content, {"type": "text", "text": "look"}]}]
    return {"model": "claude-x", "max_tokens": 64, "stream": True, "messages": messages}


SMALL = png(8, 8)
WIDE = png(8001, 1)
TALL = png(1, 8001)
LARGE = png(2001, 1)


@pytest.mark.parametrize("wide", [WIDE, TALL], ids=["wide", "tall"])
def test_an_image_over_8000_px_is_refused(wide: bytes) -> None:
    assert check_request(body(image(SMALL), image(wide))) == (
        "messages.0.content.1.image.source.base64.data: At least one of the image dimensions "
        "exceed max allowed size: 8000 pixels"
    )


def test_an_image_of_8000_px_is_accepted() -> None:
    assert check_request(body(image(png(8000, 1)))) is None


def test_over_20_images_each_must_be_at_most_2000_px() -> None:
    twenty = [image(SMALL)] * 19
    assert check_request(body(*twenty, image(LARGE))) is None, "20 images: 8000 px allowed"
    assert check_request(body(*twenty, image(SMALL), image(png(2000, 2000)))) is None
    assert check_request(body(*twenty, image(SMALL), image(LARGE))) == (
        "messages.0.content.20.image.source.base64.data: At least one of the image dimensions "
        "exceed max allowed size for many-image requests: 2000 pixels"
    )


def test_the_many_image_rule_counts_images_across_messages() -> None:
    request = body(*[image(SMALL)] * 20)
    request["messages"] += [
        {"role": "assistant", "content": [{"type": "text", "text": "seen"}]},
        {"role": "user", "content": [image(LARGE), {"type": "text", "text": "and this"}]},
    ]
    assert "messages.2.content.0.image.source.base64.data: At least one" in (
        check_request(request) or ""
    )


def test_pdfs_over_100_pages_together_are_refused() -> None:
    message = "A maximum of 100 PDF pages may be provided."
    assert check_request(body(document(pdf(101)))) == message
    assert check_request(body(document(pdf(51)), document(pdf(50)))) == message
    assert check_request(body(document(pdf(100)))) is None


def test_pdf_pages_and_images_together_are_at_most_100() -> None:
    assert check_request(body(document(pdf(60)), *[image(SMALL)] * 40)) is None
    assert check_request(body(document(pdf(60)), *[image(SMALL)] * 41)) == (
        "Too much media: 60 document pages + 41 images > 100"
    )


def test_a_body_over_32_mb_is_too_large() -> None:
    assert check_size(32_000_000) is None
    assert check_size(32_000_001) == "Request exceeds the maximum size"


@pytest.mark.anyio
async def test_the_sdk_gets_a_413_for_a_body_over_32_mb_and_no_reply_is_consumed() -> None:
    with AnthropicFake() as fake:
        fake.expect_refusals()
        fake.enqueue(text_reply("fits"))
        client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=fake.base_url, max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as refused:
            await client.messages.create(
                model="claude-x",
                max_tokens=8,
                messages=[{"role": "user", "content": "x" * 32_000_000}],
                stream=True,
            )
        fits = await client.messages.create(
            model="claude-x",
            max_tokens=8,
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
        )
        async for _event in fits:
            pass
        await client.close()
    assert refused.value.status_code == 413
    assert fake.refusals[0].status == 413
    assert fake.refusals[0].message == "Request exceeds the maximum size"
    assert fake.pending == 0, "the queued reply answered the request that fits"
