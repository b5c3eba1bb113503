"""How many pages a PDF has, read with pypdf (the cross-reference table and the page
tree's root only: no page is rendered and no content stream is decoded).

The count is the page tree's own ``/Count``, as a viewer shows it. Only when that is
missing or not a number are the pages walked: walking builds an object per page and
more per attribute (over 130,000 objects for a PDF of 8,000 pages), and building that
many makes the garbage collector scan the whole heap, which stalls every thread, the
event loop's too, for tens of milliseconds at a time.

pypdf is loaded with the first PDF read, not with the daemon.
"""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pypdf import PdfReader

logging.getLogger("pypdf").setLevel(logging.ERROR)  # a malformed file is our None


def pdf_pages(data: bytes | bytearray) -> int | None:
    """The page count of ``data``, or ``None`` when it cannot be read as a PDF (the API
    then judges it)."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        declared = _declared_count(reader)
        return declared if declared is not None else len(reader.pages)
    except Exception:  # noqa: BLE001 - pypdf raises many kinds of error on a bad file
        return None


def _declared_count(reader: PdfReader) -> int | None:
    from pypdf.generic import DictionaryObject

    tree = reader.root_object.get("/Pages")
    node = tree.get_object() if tree is not None else None
    count = node.get("/Count") if isinstance(node, DictionaryObject) else None
    count = count.get_object() if count is not None else None
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return int(count)
    return None
