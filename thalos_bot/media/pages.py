"""How many pages a PDF has, read with pypdf (the cross-reference table and the page
tree only: no page is rendered and no content stream is decoded)."""

from __future__ import annotations

import io
import logging

from pypdf import PdfReader

logging.getLogger("pypdf").setLevel(logging.ERROR)  # a malformed file is our None


def pdf_pages(data: bytes) -> int | None:
    """The page count of ``data``, or ``None`` when it cannot be read as a PDF (the API
    then judges it)."""
    try:
        return len(PdfReader(io.BytesIO(data)).pages)
    except Exception:  # noqa: BLE001 - pypdf raises many kinds of error on a bad file
        return None
