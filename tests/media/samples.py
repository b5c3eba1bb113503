"""Real media files of a given pixel size or page count, made on the spot."""

from __future__ import annotations

import io
import random
import struct
import zlib

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


def flat_png(width: int, height: int) -> bytes:
    """A greyscale PNG of one shade, written row by row: tiny on disk, ``width`` x
    ``height`` bytes once decoded, and never held whole here (a decompression bomb)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    packer = zlib.compressobj(9)
    row = b"\x00" + b"\x80" * width  # filter type 0, then the pixels
    rows, left = divmod(height, 256)
    block = row * 256
    parts = [packer.compress(block) for _ in range(rows)]
    compressed = b"".join([*parts, packer.compress(row * left), packer.flush()])
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", compressed)
        + chunk(b"IEND", b"")
    )
