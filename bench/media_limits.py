"""What fitting a request's media to the API's limits costs.

    python bench/media_limits.py [--repeat 5]

Printed (CPU ms, best of ``--repeat``):

* counting the pages of a PDF with pypdf (as intake does, in a worker thread): a
  100-page PDF, and a 20 MB one;
* :func:`fit_request` on a request of 10 images made ready at intake (the common case:
  header reads only), cold and with the facts cached;
* the same on a stored history of 25 images of 2100 px (each made ready again, which
  the 2000 px rule needs), cold and with the made-ready images cached.
"""

from __future__ import annotations

import argparse
import io
import random
import time
from collections.abc import Callable
from functools import partial

from PIL import Image
from pypdf import PdfWriter

from thalos_bot.domain.messages import ImageBlock, Message, TextBlock
from thalos_bot.media.fit import MediaFacts, fit_request
from thalos_bot.media.pages import pdf_pages
from thalos_bot.media.store import StoredMedia, media_hash


def _pdf(pages: int, padding: int = 0) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=612, height=792)
    if padding:
        writer.add_attachment("padding.bin", random.Random(1).randbytes(padding))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _jpeg(width: int, height: int, shade: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (shade, 90, 200 - shade)).save(out, format="JPEG")
    return out.getvalue()


def _history(images: list[bytes]) -> tuple[list[Message], dict[str, StoredMedia]]:
    media = {media_hash(d): StoredMedia(media_hash(d), "image/jpeg", d) for d in images}
    messages: list[Message] = []
    for digest, stored in media.items():
        block = ImageBlock(digest, "image/jpeg", stored.size)
        messages += [
            Message("user", (block, TextBlock("look"))),
            Message("assistant", (TextBlock("seen"),)),
        ]
    messages.append(Message("user", (TextBlock("and now?"),)))
    return messages, media


def _best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat

    hundred, big = _pdf(100), _pdf(100, padding=20_000_000)
    for label, data in (("100 pages", hundred), ("20 MB", big)):
        spent = _best(repeat, partial(pdf_pages, data))
        print(f"pdf_pages {label} ({len(data):,} B): {spent:.2f} ms")
    for label, images in (
        ("10 images made ready at intake", [_jpeg(1568, 1176, n) for n in range(10)]),
        ("25 stored images of 2100 px", [_jpeg(2100, 1200, n) for n in range(25)]),
    ):
        _fits(label, images, repeat)


def _fits(label: str, images: list[bytes], repeat: int) -> None:
    messages, media = _history(images)
    cold = _best(repeat, lambda: fit_request(messages, media, facts=MediaFacts()))
    facts = MediaFacts()
    fit_request(messages, media, facts=facts)
    warm = _best(repeat, lambda: fit_request(messages, media, facts=facts))
    print(f"fit_request, {label}: cold {cold:.2f} ms, cached {warm:.2f} ms")


if __name__ == "__main__":
    main()
