"""A request's media fitted to the API's limits, just before it is sent.

The limits (:mod:`thalos_bot.media.limits`) hold for a whole request, and a request
carries the history: media the API refuses there would be refused again on every later
turn, and the session would never answer again. So every request is fitted here, after
compaction and the history repair, with the bytes in hand:

* a PDF over the page limit, or an image that cannot be read, becomes a short note
  (only a history stored before those were checked at intake can hold one);
* the newest media are kept while the request stays within 100 blocks, 100 PDF pages
  plus images, and 32 MB; older ones become a placeholder, as media past
  ``keep_media_turns`` already do;
* a kept image over the side limit (8000 px, or 2000 px once more than 20 images are
  kept), over 5 MB or of a type the API does not take is made ready again (scaled to
  the 1568 px long edge, re-encoded) for this request only; the stored bytes stay.

Images made ready at intake are already within every one of these, so for them this
is a header read. The stored history is never changed: what is sent is.
"""

from __future__ import annotations

import json
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from thalos_bot.domain.messages import (
    Block,
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from thalos_bot.media.images import MAX_IMAGE_BYTES, image_size, prepare_image_sync
from thalos_bot.media.limits import (
    MANY_IMAGES,
    MAX_IMAGE_SIDE,
    MAX_MANY_IMAGES_SIDE,
    MAX_MEDIA,
    MAX_PDF_PAGES,
    MAX_REQUEST_BYTES,
    MediaRejectedError,
)
from thalos_bot.media.pages import pdf_pages
from thalos_bot.media.store import StoredMedia

IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
REQUEST_MARGIN_BYTES = 256 * 1024
"""Room kept for what :func:`fit_request` does not count: the JSON around the blocks,
the model name, tool choice and the like."""

OVER_BUDGET = (
    "[{what} not shown: this request already holds as much media as the model takes at "
    "once (100 images and PDF pages, 32 MB); newer ones were kept.]"
)
TOO_LONG = (
    "[A PDF{name} of {pages:,} pages, not shown: the model reads at most "
    f"{MAX_PDF_PAGES} pages at a time.]"
)
UNREADABLE = "[An image that could not be read, not shown.]"


@dataclass(frozen=True, slots=True)
class Fitted:
    messages: list[Message]
    media: dict[str, StoredMedia]
    """The bytes to send, by hash: the stored ones, or an image made ready again."""
    fixes: Mapping[str, int] = field(default_factory=dict)
    """What was changed, by kind (``pdfs_over_page_limit``, ``unreadable_images``,
    ``media_over_budget``, ``images_made_ready``); empty when nothing was."""


class MediaFacts:
    """Pixel sizes and page counts by content hash. Stored media never change under a
    hash, so what was read once holds; a bounded cache shared by every request."""

    def __init__(self, capacity: int = 4096, ready_capacity: int = MAX_MEDIA) -> None:
        self._capacity = capacity
        self._known: OrderedDict[str, tuple[int, int] | int | None] = OrderedDict()
        self._ready_capacity = ready_capacity
        self._ready: OrderedDict[str, StoredMedia | None] = OrderedDict()
        self._lock = threading.Lock()

    def ready(self, stored: StoredMedia) -> StoredMedia | None:
        """``stored`` made ready for the API (scaled, re-encoded), or ``None`` when it
        cannot be; as many as one request can hold are kept (each at most 1568 px), so a
        stored history of large images is not scaled again on every request."""
        with self._lock:
            if stored.hash in self._ready:
                self._ready.move_to_end(stored.hash)
                return self._ready[stored.hash]
        try:
            prepared = prepare_image_sync(stored.data)
        except MediaRejectedError:
            made = None
        else:
            made = StoredMedia(stored.hash, prepared.media_type, prepared.data)
        with self._lock:
            self._ready[stored.hash] = made
            while len(self._ready) > self._ready_capacity:
                self._ready.popitem(last=False)
        return made

    def _cached(self, digest: str) -> tuple[bool, tuple[int, int] | int | None]:
        with self._lock:
            if digest in self._known:
                self._known.move_to_end(digest)
                return True, self._known[digest]
        return False, None

    def _keep(self, digest: str, value: tuple[int, int] | int | None) -> None:
        with self._lock:
            self._known[digest] = value
            while len(self._known) > self._capacity:
                self._known.popitem(last=False)

    def size(self, stored: StoredMedia) -> tuple[int, int] | None:
        found, value = self._cached(stored.hash)
        if found and not isinstance(value, int):
            return value
        size = image_size(stored.data)
        self._keep(stored.hash, size)
        return size

    def pages(self, stored: StoredMedia) -> int | None:
        found, value = self._cached(stored.hash)
        if found and not isinstance(value, tuple):
            return value
        pages = pdf_pages(stored.data)
        self._keep(stored.hash, pages)
        return pages


FACTS = MediaFacts()


def base64_length(size: int) -> int:
    return (size + 2) // 3 * 4


def json_bytes(value: object) -> int:
    """An upper bound of what ``value`` takes in the request body (ASCII-escaped JSON is
    never shorter than the UTF-8 form)."""
    return len(json.dumps(value, default=str))


def _block_bytes(block: Block) -> int:
    if isinstance(block, TextBlock):
        return json_bytes(block.text) + 32
    if isinstance(block, ToolUseBlock):
        return json_bytes(dict(block.input)) + len(block.id) + len(block.name) + 64
    if isinstance(block, ToolResultBlock):
        return json_bytes(block.content) + len(block.tool_use_id) + 80
    return 0  # media: counted by the budget


def text_bytes(messages: Sequence[Message]) -> int:
    """What the non-media blocks of ``messages`` take in the request body, at most."""
    return sum(_block_bytes(b) for m in messages for b in m.content) + 32 * len(messages)


@dataclass(slots=True)
class _Item:
    at: tuple[int, int]
    block: ImageBlock | DocumentBlock
    stored: StoredMedia
    units: int
    """Images count one; a PDF counts its pages."""
    sent_bytes: int
    """Its base64 length, at most (an image made ready is within 5 MB)."""
    size: tuple[int, int] | None = None


def _judge(
    at: tuple[int, int],
    block: ImageBlock | DocumentBlock,
    stored: StoredMedia,
    *,
    facts: MediaFacts,
    notes: dict[tuple[int, int], TextBlock],
    fixes: Counter[str],
) -> _Item | None:
    """The item to budget, or ``None`` with a note put in its place."""
    sent = base64_length(stored.size)
    if isinstance(block, ImageBlock):
        size = facts.size(stored)
        if size is None:
            notes[at] = TextBlock(UNREADABLE)
            fixes["unreadable_images"] += 1
            return None
        return _Item(at, block, stored, 1, min(sent, MAX_IMAGE_BYTES), size)
    pages = facts.pages(stored)
    if pages is not None and pages > MAX_PDF_PAGES:
        name = f" “{block.name}”" if block.name else ""
        notes[at] = TextBlock(TOO_LONG.format(name=name, pages=pages))
        fixes["pdfs_over_page_limit"] += 1
        return None
    return _Item(at, block, stored, max(1, pages or 1), sent)


def _needs_preparing(item: _Item, side: int) -> bool:
    return (
        item.stored.media_type not in IMAGE_MEDIA_TYPES
        or base64_length(item.stored.size) > MAX_IMAGE_BYTES
        or (item.size is not None and max(item.size) > side)
    )


def fit_request(
    messages: Sequence[Message],
    media: Mapping[str, StoredMedia],
    *,
    fixed_bytes: int = 0,
    facts: MediaFacts = FACTS,
) -> Fitted:
    """``messages`` and their media within the API's media limits (see the module
    docstring). ``fixed_bytes`` is what the system prompt and tools take. Blocking
    (Pillow, pypdf): run it in a worker thread."""
    notes: dict[tuple[int, int], TextBlock] = {}
    fixes: Counter[str] = Counter()
    items: list[_Item] = []
    for m_index, message in enumerate(messages):
        for b_index, block in enumerate(message.content):
            if not isinstance(block, ImageBlock | DocumentBlock):
                continue
            stored = media.get(block.media_hash)
            if stored is None:
                continue  # sent as a short note that it is no longer stored
            item = _judge((m_index, b_index), block, stored, facts=facts, notes=notes, fixes=fixes)
            if item is not None:
                items.append(item)
    room = MAX_REQUEST_BYTES - REQUEST_MARGIN_BYTES - fixed_bytes - text_bytes(messages)
    kept: list[_Item] = []
    blocks = units = sent = 0
    for item in reversed(items):  # the newest first
        if (
            blocks + 1 > MAX_MEDIA
            or units + item.units > MAX_MEDIA
            or sent + item.sent_bytes > room
        ):
            what = "An image" if isinstance(item.block, ImageBlock) else "A PDF"
            notes[item.at] = TextBlock(OVER_BUDGET.format(what=what))
            fixes["media_over_budget"] += 1
            continue
        blocks, units, sent = blocks + 1, units + item.units, sent + item.sent_bytes
        kept.append(item)
    images = [item for item in kept if isinstance(item.block, ImageBlock)]
    side = MAX_MANY_IMAGES_SIDE if len(images) > MANY_IMAGES else MAX_IMAGE_SIDE
    out = dict(media)
    failed: set[str] = set()
    for item in images:
        digest = item.stored.hash
        if out[digest] is not item.stored or digest in failed or not _needs_preparing(item, side):
            continue
        ready = facts.ready(item.stored)
        if ready is None:
            failed.add(digest)
            continue
        out[digest] = ready
        fixes["images_made_ready"] += 1
    for item in images:
        if item.stored.hash in failed:
            notes[item.at] = TextBlock(UNREADABLE)
            fixes["unreadable_images"] += 1
    if not notes:
        return Fitted(list(messages), out, dict(fixes))
    return Fitted(_with_notes(messages, notes), out, dict(fixes))


def _with_notes(
    messages: Sequence[Message], notes: Mapping[tuple[int, int], TextBlock]
) -> list[Message]:
    out = list(messages)
    for m_index in sorted({at[0] for at in notes}):
        message = messages[m_index]
        content = tuple(notes.get((m_index, b), block) for b, block in enumerate(message.content))
        out[m_index] = Message(message.role, content)
    return out
