"""Real media files of a given pixel size or page count, made on the spot."""

from __future__ import annotations

import io
import random

from PIL import Image
from pypdf import PdfWriter


def png(width: int, height: int, shade: int = 128) -> bytes:
    out = io.BytesIO()
    Image.new("L", (width, height), shade).save(out, format="PNG")
    return out.getvalue()


def pdf(pages: int, *, padding: int = 0) -> bytes:
    """A PDF of ``pages`` blank pages; ``padding`` bytes of incompressible data embedded
    as a file make it that much larger."""
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=72, height=72)
    if padding:
        writer.add_attachment("padding.bin", random.Random(pages).randbytes(padding))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
