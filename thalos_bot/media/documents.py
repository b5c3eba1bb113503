"""Which files the model can read, judged by what they claim to be *and* what they hold.

* a PDF (``application/pdf`` or ``.pdf``, starting ``%PDF-``) goes as a document, when
  it is within the API's size and page limits (a longer one is refused with a notice, so
  it never enters a history that every later request would carry);
* a text-like file (a text MIME type or a known source/data extension, whose bytes
  decode as UTF-8 with no NUL and few control characters) goes as text, capped; an SVG
  is one (its source is XML the model reads), whatever ``image/*`` type it claims;
* anything else is refused with a notice listing what is understood.

The checks take a while on a large file (seconds for a PDF with a broken cross-reference
table): :func:`read_document_off_loop` runs them in a worker thread.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from thalos_bot.media.limits import MAX_PDF_BYTES, MAX_PDF_PAGES, MediaRejectedError
from thalos_bot.media.pages import pdf_pages
from thalos_bot.media.work import off_loop

_TEXT_EXTENSIONS = (
    "txt md markdown rst csv tsv json jsonl yaml yml toml ini cfg conf env py pyi js mjs cjs "
    "ts tsx jsx go rs java kt kts c h cc cpp hpp cs rb php swift scala sh bash zsh fish ps1 "
    "sql log html htm xml svg css scss less tex diff patch lua pl r dart vue"
)
TEXT_EXTENSIONS = frozenset(_TEXT_EXTENSIONS.split())
TEXT_MIME_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/javascript",
        "application/x-javascript",
        "application/typescript",
        "application/x-sh",
        "application/x-shellscript",
        "application/sql",
        "application/x-httpd-php",
        "image/svg+xml",
    }
)
GENERIC_MIME_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream"})
CONTROL_SHARE = 0.01
"""More control characters (other than tab, newline, carriage return, form feed) than
this share of the text means it is not text."""
_CONTROL_BYTES = bytes(b for b in range(32) if b not in b"\t\n\r\f")
"""In UTF-8 these bytes are only ever those characters (a byte of a multi-byte sequence
is 0x80 or above), so they are counted in the bytes, at C speed."""
_SLICE = 1 << 20
"""Bytes per C call on a large file: each holds the GIL, so it is kept to a millisecond
or so, and the event loop's thread gets its turn in between."""
_SVG_SNIFF = 4096
"""How far into a file to look for the ``<svg`` of an SVG."""

UNDERSTOOD = (
    "I can read photos and images (JPEG, PNG, GIF, WebP), PDF files, and text files "
    "(plain text, Markdown, CSV, JSON, YAML, TOML, source code, logs, HTML, XML, SVG and "
    "the like). {what} is none of these."
)
PDF_TOO_LARGE = f"That PDF is too large for the model (at most {MAX_PDF_BYTES // 1_000_000} MB)."
PDF_TOO_LONG = (
    "That PDF has {pages:,} pages; the model reads at most "
    f"{MAX_PDF_PAGES} pages at a time. Send a shorter part of it (fewer pages)."
)
CUT_MARKER = "\n[… cut here: the file has {total:,} characters; only the first {kept:,} are shown.]"


@dataclass(frozen=True, slots=True)
class ReadDocument:
    kind: Literal["pdf", "text"]
    media_type: str
    data: bytes
    """The PDF's bytes, or the (possibly cut) text as UTF-8."""
    cut: bool = False
    pages: int | None = None
    """A PDF's page count (``None`` when pypdf could not read it; the API judges it)."""


def _extension(name: str) -> str:
    return PurePosixPath(name.lower()).suffix.lstrip(".")


def _claims_text(name: str, mime_type: str) -> bool:
    mime = mime_type.lower().split(";", 1)[0].strip()
    if mime.startswith("text/") or mime in TEXT_MIME_TYPES or mime.endswith(("+json", "+xml")):
        return True
    return mime in GENERIC_MIME_TYPES and _extension(name) in TEXT_EXTENSIONS


Bytes = bytes | bytearray
"""A file as downloaded (a buffer that is never copied whole on the event loop)."""


def is_svg(name: str, mime_type: str | None, data: Bytes) -> bool:
    """An SVG by its type, its extension or its first bytes (markup that opens ``<svg``)."""
    mime = (mime_type or "").lower().split(";", 1)[0].strip()
    if mime == "image/svg+xml" or _extension(name) == "svg":
        return True
    head = bytes(data[:_SVG_SNIFF]).removeprefix(codecs.BOM_UTF8).lstrip()
    return head.startswith((b"<?xml", b"<svg", b"<!DOCTYPE svg", b"<!--")) and b"<svg" in head


def _as_text(data: Bytes, keep: int) -> tuple[str, int] | None:
    """The first ``keep`` characters of ``data`` as text, and how many it has in all;
    ``None`` when it is not text. The rest is checked and counted, never joined."""
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    decoder = codecs.getincrementaldecoder("utf-8")()
    kept: list[str] = []
    total = control = 0
    try:
        for start in range(skip, len(data) + 1, _SLICE):
            piece = data[start : start + _SLICE]
            if b"\x00" in piece:
                return None  # binary
            control += len(piece) - len(piece.translate(None, _CONTROL_BYTES))
            part = decoder.decode(piece, final=start + _SLICE >= len(data))
            if total < keep:
                kept.append(part[: keep - total])
            total += len(part)
    except UnicodeDecodeError:
        return None
    if total and control / total > CONTROL_SHARE:
        return None
    return "".join(kept), total


def _described(name: str) -> str:
    return f"“{name}”" if name else "That file"


def read_document(name: str, mime_type: str | None, data: Bytes, *, max_chars: int) -> ReadDocument:
    """What the model gets for a file, or :class:`MediaRejectedError` with the notice."""
    mime = (mime_type or "").lower()
    if (mime == "application/pdf" or _extension(name) == "pdf") and data.startswith(b"%PDF-"):
        if len(data) > MAX_PDF_BYTES:
            raise MediaRejectedError(PDF_TOO_LARGE)
        pages = pdf_pages(data)
        if pages is not None and pages > MAX_PDF_PAGES:
            raise MediaRejectedError(PDF_TOO_LONG.format(pages=pages))
        return ReadDocument("pdf", "application/pdf", bytes(data), pages=pages)
    if _claims_text(name, mime) or is_svg(name, mime, data):
        read = _as_text(data, max_chars)
        if read is not None:
            text, total = read
            cut = total > max_chars
            if cut:
                text += CUT_MARKER.format(total=total, kept=max_chars)
            return ReadDocument("text", "text/plain", text.encode("utf-8"), cut=cut)
    raise MediaRejectedError(not_understood(name))


async def read_document_off_loop(
    name: str, mime_type: str | None, data: Bytes, *, max_chars: int
) -> ReadDocument:
    """:func:`read_document` in a worker thread, under the media limiter."""
    return await off_loop(_read, name, mime_type, data, max_chars)


def _read(name: str, mime_type: str | None, data: Bytes, max_chars: int) -> ReadDocument:
    return read_document(name, mime_type, data, max_chars=max_chars)


def not_understood(name: str) -> str:
    """The notice for a file that is none of the kinds understood."""
    return UNDERSTOOD.format(what=_described(name))


def might_read(name: str, mime_type: str | None) -> bool:
    """Worth downloading: a PDF, an image, or something that claims to be text (the
    bytes decide after)."""
    mime = (mime_type or "").lower()
    return (
        mime == "application/pdf"
        or _extension(name) == "pdf"
        or mime.startswith("image/")
        or _claims_text(name, mime)
    )
