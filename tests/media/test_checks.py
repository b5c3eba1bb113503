"""The checks before anything is sent: images the API takes, files the model can read."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from tests.media.samples import pdf
from thalos_bot.media.documents import CUT_MARKER, might_read, read_document
from thalos_bot.media.images import MAX_LONG_EDGE, UNREADABLE, prepare_image_sync
from thalos_bot.media.limits import MediaRejectedError


def encoded(image: Image.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


def test_a_small_supported_image_is_sent_as_it_is() -> None:
    data = encoded(Image.new("RGB", (800, 600), "red"), "PNG")
    prepared = prepare_image_sync(data)
    assert prepared.data == data
    assert prepared.media_type == "image/png"
    assert not prepared.scaled


def test_a_large_image_is_scaled_to_the_long_edge_and_keeps_its_transparency() -> None:
    data = encoded(Image.new("RGBA", (1000, 4000), (0, 0, 255, 128)), "PNG")
    prepared = prepare_image_sync(data)
    assert (prepared.width, prepared.height) == (392, MAX_LONG_EDGE)
    assert prepared.media_type == "image/png"
    assert Image.open(io.BytesIO(prepared.data)).mode == "RGBA"


def test_a_format_the_api_does_not_take_is_converted() -> None:
    prepared = prepare_image_sync(encoded(Image.new("RGB", (40, 30), "green"), "BMP"))
    assert prepared.media_type == "image/jpeg"
    assert Image.open(io.BytesIO(prepared.data)).format == "JPEG"


def test_bytes_that_are_no_image_are_refused_with_the_kinds_understood() -> None:
    with pytest.raises(MediaRejectedError) as refused:
        prepare_image_sync(b"GIF89a but not really")
    assert refused.value.notice == UNREADABLE


def test_a_pdf_must_really_be_one() -> None:
    assert read_document("a.pdf", "application/pdf", b"%PDF-1.7 ...", max_chars=10).kind == "pdf"
    with pytest.raises(MediaRejectedError):
        read_document("a.pdf", "application/pdf", b"<html>not a pdf</html>", max_chars=10)


@pytest.mark.parametrize(
    ("name", "mime"),
    [("notes.md", "text/markdown"), ("main.go", "application/octet-stream"), ("a.json", None)],
)
def test_text_is_judged_by_what_it_claims_and_what_it_holds(name: str, mime: str | None) -> None:
    assert might_read(name, mime)
    document = read_document(name, mime, "héllo\n".encode(), max_chars=100)
    assert document.kind == "text"
    assert document.data.decode() == "héllo\n"
    with pytest.raises(MediaRejectedError):
        read_document(name, mime, b"\xff\xfe\x00\x01binary", max_chars=100)


def test_a_binary_kind_is_not_even_worth_downloading() -> None:
    assert not might_read("song.mp3", "audio/mpeg")
    assert not might_read("archive", "application/octet-stream")


def test_a_long_text_is_cut_with_an_explicit_marker() -> None:
    document = read_document("log.txt", "text/plain", b"x" * 5000, max_chars=1000)
    assert document.cut
    text = document.data.decode()
    assert text == "x" * 1000 + CUT_MARKER.format(total=5000, kept=1000)


def test_a_pdf_over_100_pages_is_refused_with_a_notice_naming_the_limit() -> None:
    with pytest.raises(MediaRejectedError) as refused:
        read_document("book.pdf", "application/pdf", pdf(101), max_chars=10)
    assert refused.value.notice == (
        "That PDF has 101 pages; the model reads at most 100 pages at a time. "
        "Send a shorter part of it (fewer pages)."
    )
    within = read_document("book.pdf", "application/pdf", pdf(100), max_chars=10)
    assert (within.kind, within.pages) == ("pdf", 100)


def test_a_pdf_without_a_page_count_has_its_pages_counted() -> None:
    from thalos_bot.media.pages import pdf_pages

    data = pdf(3)
    assert b"/Count 3" in data
    assert pdf_pages(data) == 3
    assert pdf_pages(data.replace(b"/Count 3", b"/Cxunt 3")) == 3, "walked instead"
