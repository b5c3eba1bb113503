"""What the real Messages API refuses, checked the way it checks: one JSON body in, the
first problem out (``None`` for a request the API accepts).

The fake calls :func:`check_request` on every ``POST /v1/messages`` and answers a problem
with ``400 invalid_request_error`` and the API's own wording, so a product bug that real
users would meet as "every later turn is refused" fails the test that causes it.

Rules (wording as the API returns it; ``N``/``M`` are indexes into the request):

* ``messages`` is present and not empty; a role is ``user`` or ``assistant``;
* consecutive messages of one role are combined first (the API does that too), then the
  first message is ``user``;
* every message has content, except an optional final assistant message;
* a text block (in a message, the system prompt or a tool result) is neither empty nor
  whitespace only; a final assistant message does not end in whitespace;
* ``tool_use`` only in assistant messages, ``tool_result`` only in user messages;
* every ``tool_use`` id is answered by a ``tool_result`` at the start of the very next
  user message; every ``tool_result`` answers a ``tool_use`` of the message just before;
* at most 4 blocks carry ``cache_control`` across system, tools and messages;
* tool names match ``^[a-zA-Z0-9_-]{1,128}$`` and are unique;
* images are base64 JPEG/PNG/GIF/WebP of at most 5 MB; documents are base64 PDF or
  plain text; at most 100 images and documents in one request (a 200k-window model);
* an image is at most 8000 px on each side, and at most 2000 px when the request holds
  more than 20 images (the pixel size is read from the image's header with Pillow; an
  image Pillow cannot open is not judged here);
* the PDFs of one request have at most 100 pages together, and their pages plus the
  images are at most 100 (a 200k-window model; pages counted with pypdf, a PDF pypdf
  cannot read counts as one page);
* the whole request body is at most 32 MB (:func:`check_size`; the real refusal is a
  ``413 request_too_large`` from the API's edge, not a 400).

Sources: the vision guide ("larger than 8000x8000 px ... rejected", "more than 20
images ... 2000x2000 px"), the PDF guide ("Maximum pages per request: 100 for models
with a 200k-token context window", limits "on the entire request payload") and the API
overview ("32 MB ... 413 request_too_large"). The wording of the dimension, page and
media refusals is the real API's, as users have quoted it in public bug reports. "32 MB"
is read as 32,000,000 bytes, the stricter of its two readings.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, UnidentifiedImageError
from pypdf import PdfReader

MAX_CACHE_BREAKPOINTS = 4
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")

EMPTY_TEXT = "text content blocks must be non-empty"
BLANK_TEXT = "text content blocks must contain non-whitespace text"
NO_MESSAGES = "messages: at least one message is required"
FIRST_NOT_USER = 'messages: first message must use the "user" role'
TRAILING_WHITESPACE = "messages: final assistant content cannot end with trailing whitespace"
EMPTY_CONTENT = (
    "all messages must have non-empty content except for the optional final assistant message"
)
ROLE = "Input should be 'user' or 'assistant'"
TOOL_USE_ROLE = "`tool_use` blocks can only be in `assistant` messages"
TOOL_RESULT_ROLE = "`tool_result` blocks can only be in `user` messages"
MISSING_RESULTS = (
    "`tool_use` ids were found without `tool_result` blocks immediately after: {ids}. "
    "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
)
ORPHAN_RESULT = (
    "unexpected `tool_use_id` found in `tool_result` blocks: {id}. "
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
)
TOO_MANY_BREAKPOINTS = "A maximum of 4 blocks with cache_control may be provided. Found {n}."
TOOL_NAME_PATTERN = "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"
TOOL_NAMES_UNIQUE = "tools: Tool names must be unique."
IMAGE_MEDIA_TYPE = "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
MAX_MEDIA = 100
TOO_MUCH_MEDIA = "too many images and documents: {images} + {documents} > 100"
IMAGE_TOO_LARGE = "image exceeds 5 MB maximum: {size} bytes > 5242880 bytes"
MAX_IMAGE_SIDE = 8000
MANY_IMAGES = 20
MAX_MANY_IMAGES_SIDE = 2000
MAX_PDF_PAGES = 100
MAX_REQUEST_BYTES = 32_000_000
IMAGE_TOO_WIDE = "At least one of the image dimensions exceed max allowed size: 8000 pixels"
IMAGE_TOO_WIDE_FOR_MANY = (
    "At least one of the image dimensions exceed max allowed size for many-image requests: "
    "2000 pixels"
)
TOO_MANY_PAGES = "A maximum of 100 PDF pages may be provided."
TOO_MUCH_MEDIA_PAGES = "Too much media: {pages} document pages + {images} images > 100"
REQUEST_TOO_LARGE = "Request exceeds the maximum size"
"""The body of the edge's ``413 request_too_large`` (see :func:`check_size`)."""
PDF_MEDIA_TYPE = "Input should be 'application/pdf'"
PLAIN_TEXT_MEDIA_TYPE = "Input should be 'text/plain'"
FIELD_REQUIRED = "Field required"

_USER_BLOCKS = frozenset({"text", "image", "document", "tool_result", "search_result"})
_ASSISTANT_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})


class Invalid(Exception):  # noqa: N818 - reads as "raise Invalid(...)", like the API's refusal
    """The first problem found; ``str()`` is the API's error message."""


@dataclass(slots=True)
class _Combined:
    """Consecutive messages of one role, combined as the API combines them."""

    index: int
    """The index of the first message of the group, for error texts."""
    role: str
    blocks: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    """``(path, block)`` pairs, the path naming the block in the original request."""


def check_size(size: int) -> str | None:
    """The ``413 request_too_large`` message for a body of ``size`` bytes, or ``None``."""
    return REQUEST_TOO_LARGE if size > MAX_REQUEST_BYTES else None


def check_request(body: object) -> str | None:
    """The API's error message for ``body``, or ``None`` when it would be accepted."""
    try:
        _check(body)
    except Invalid as problem:
        return str(problem)
    return None


def _check(body: object) -> None:
    if not isinstance(body, Mapping):
        raise Invalid("body: Input should be a valid dictionary")
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            raise Invalid(f"{name}: {FIELD_REQUIRED}")
    _check_tools(body.get("tools"))
    _check_system(body.get("system"))
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise Invalid(NO_MESSAGES)
    for index, message in enumerate(messages):
        _check_message(index, message)
    _check_media_count(messages)
    _check_media_sizes(messages)
    _check_breakpoints(body)
    groups = _combine(messages)
    if groups[0].role != "user":
        raise Invalid(FIRST_NOT_USER)
    for position, group in enumerate(groups):
        final = position == len(groups) - 1
        if not group.blocks and not (final and group.role == "assistant"):
            raise Invalid(f"messages.{group.index}: {EMPTY_CONTENT}")
        previous = groups[position - 1] if position else None
        if group.role == "user":
            _check_results_answer(group, previous)
        following = None if final else groups[position + 1]
        if group.role == "assistant":
            _check_uses_answered(group, following)
    last = groups[-1]
    if last.role == "assistant" and last.blocks:
        _path, block = last.blocks[-1]
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str) and text != text.rstrip():
            raise Invalid(TRAILING_WHITESPACE)


def _media_in(path: str, blocks: object) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(path, block)`` for every image and document block, those in tool results too."""
    for position, block in enumerate(_blocks(blocks)):
        where = f"{path}.{position}"
        kind = block.get("type")
        if kind in {"image", "document"}:
            yield where, block
        elif kind == "tool_result" and isinstance(block.get("content"), list):
            yield from _media_in(f"{where}.tool_result.content", block["content"])


def _request_media(messages: Sequence[object]) -> list[tuple[str, Mapping[str, Any]]]:
    return [
        item
        for index, message in enumerate(messages)
        if isinstance(message, Mapping)
        for item in _media_in(f"messages.{index}.content", message.get("content"))
    ]


def _check_media_count(messages: Sequence[object]) -> None:
    kinds = [block.get("type") for _path, block in _request_media(messages)]
    images, documents = kinds.count("image"), kinds.count("document")
    if images + documents > MAX_MEDIA:
        raise Invalid(TOO_MUCH_MEDIA.format(images=images, documents=documents))


def _base64_bytes(block: Mapping[str, Any]) -> bytes | None:
    source = block.get("source")
    if not isinstance(source, Mapping) or source.get("type") != "base64":
        return None
    try:
        return base64.b64decode(str(source.get("data", "")), validate=True)
    except (binascii.Error, ValueError):
        return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """An image's pixel size from its header, or ``None`` when Pillow cannot open it."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            return image.size
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None


def pdf_pages(data: bytes) -> int | None:
    """A PDF's page count, or ``None`` when pypdf cannot read it."""
    try:
        return len(PdfReader(io.BytesIO(data)).pages)
    except Exception:  # pypdf raises many kinds of error on a malformed file
        return None


def _check_media_sizes(messages: Sequence[object]) -> None:
    media = _request_media(messages)
    images = [(path, block) for path, block in media if block.get("type") == "image"]
    side = MAX_MANY_IMAGES_SIDE if len(images) > MANY_IMAGES else MAX_IMAGE_SIDE
    for path, block in images:
        data = _base64_bytes(block)
        size = image_size(data) if data is not None else None
        if size is not None and max(size) > side:
            wording = IMAGE_TOO_WIDE_FOR_MANY if side == MAX_MANY_IMAGES_SIDE else IMAGE_TOO_WIDE
            raise Invalid(f"{path}.image.source.base64.data: {wording}")
    pages = 0
    for _path, block in media:
        source = block.get("source")
        pdf = isinstance(source, Mapping) and source.get("media_type") == "application/pdf"
        if block.get("type") == "document" and pdf:
            data = _base64_bytes(block)
            counted = pdf_pages(data) if data is not None else None
            pages += counted if counted is not None else 1
    if pages > MAX_PDF_PAGES:
        raise Invalid(TOO_MANY_PAGES)
    if pages + len(images) > MAX_MEDIA:
        raise Invalid(TOO_MUCH_MEDIA_PAGES.format(pages=pages, images=len(images)))


# --- tools and system ------------------------------------------------------------------


def _check_tools(tools: object) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise Invalid("tools: Input should be a valid list")
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise Invalid(f"tools.{index}: Input should be a valid dictionary")
        if "type" in tool and tool["type"] != "custom":
            continue  # a server tool (web search, ...): named by the API
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise Invalid(f"tools.{index}.custom.name: {TOOL_NAME_PATTERN}")
        if "input_schema" not in tool:
            raise Invalid(f"tools.{index}.custom.input_schema: {FIELD_REQUIRED}")
        if name in seen:
            raise Invalid(TOOL_NAMES_UNIQUE)
        seen.add(name)


def _check_system(system: object) -> None:
    if system is None:
        return
    if isinstance(system, str):
        if not system:
            raise Invalid(f"system: {EMPTY_TEXT}")
        return
    if not isinstance(system, list):
        raise Invalid("system: Input should be a valid string or list")
    for index, block in enumerate(system):
        if not isinstance(block, Mapping) or block.get("type") != "text":
            raise Invalid(f"system.{index}: Input should be a text block")
        _check_text("system", block)


def _check_text(where: str, block: Mapping[str, Any]) -> None:
    text = block.get("text")
    if not isinstance(text, str):
        raise Invalid(f"{where}: text: Input should be a valid string")
    if not text:
        raise Invalid(f"{where}: {EMPTY_TEXT}")
    if not text.strip():
        raise Invalid(f"{where}: {BLANK_TEXT}")


# --- one message at a time ---------------------------------------------------------------


def _blocks(content: object) -> list[Mapping[str, Any]]:
    """Content as blocks: a string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list) and all(isinstance(b, Mapping) for b in content):
        return list(content)
    raise Invalid("content: Input should be a valid string or list of content blocks")


def _check_message(index: int, message: object) -> None:
    if not isinstance(message, Mapping):
        raise Invalid(f"messages.{index}: Input should be a valid dictionary")
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise Invalid(f"messages.{index}.role: {ROLE}")
    if "content" not in message:
        raise Invalid(f"messages.{index}.content: {FIELD_REQUIRED}")
    for position, block in enumerate(_blocks(message["content"])):
        _check_block(f"messages.{index}.content.{position}", index, str(role), block)


def _check_block(path: str, index: int, role: str, block: Mapping[str, Any]) -> None:
    kind = block.get("type")
    if kind == "tool_use" and role != "assistant":
        raise Invalid(f"messages.{index}: {TOOL_USE_ROLE}")
    if kind == "tool_result" and role != "user":
        raise Invalid(f"messages.{index}: {TOOL_RESULT_ROLE}")
    allowed = _USER_BLOCKS if role == "user" else _ASSISTANT_BLOCKS
    if kind not in allowed:
        expected = ", ".join(repr(t) for t in sorted(allowed))
        raise Invalid(
            f"{path}: Input tag {kind!r} found using 'type' does not match any of the "
            f"expected tags: {expected}"
        )
    if kind == "text":
        _check_text("messages", block)
    elif kind == "image":
        _check_image(f"{path}.image", block)
    elif kind == "document":
        _check_document(f"{path}.document", block)
    elif kind == "tool_use":
        if not isinstance(block.get("id"), str) or not isinstance(block.get("input"), Mapping):
            raise Invalid(f"{path}.tool_use: id and input are required")
    elif kind == "tool_result":
        _check_tool_result(f"{path}.tool_result", block)


def _check_tool_result(path: str, block: Mapping[str, Any]) -> None:
    if not isinstance(block.get("tool_use_id"), str):
        raise Invalid(f"{path}.tool_use_id: {FIELD_REQUIRED}")
    content = block.get("content")
    if content is None or isinstance(content, str):
        return
    for position, inner in enumerate(_blocks(content)):
        where = f"{path}.content.{position}"
        kind = inner.get("type")
        if kind == "text":
            _check_text("messages", inner)
        elif kind == "image":
            _check_image(f"{where}.image", inner)
        elif kind == "document":
            _check_document(f"{where}.document", inner)
        elif kind != "search_result":
            raise Invalid(f"{where}: Input tag {kind!r} does not match the expected tags")


def _check_image(path: str, block: Mapping[str, Any]) -> None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise Invalid(f"{path}.source: {FIELD_REQUIRED}")
    if source.get("type") != "base64":
        return  # url / file sources are fetched by the API
    if source.get("media_type") not in IMAGE_MEDIA_TYPES:
        raise Invalid(f"{path}.source.base64.media_type: {IMAGE_MEDIA_TYPE}")
    size = len(str(source.get("data", "")).encode())
    if size > MAX_IMAGE_BASE64_BYTES:
        raise Invalid(f"{path}.source.base64: {IMAGE_TOO_LARGE.format(size=size)}")


def _check_document(path: str, block: Mapping[str, Any]) -> None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise Invalid(f"{path}.source: {FIELD_REQUIRED}")
    kind = source.get("type")
    if kind == "base64" and source.get("media_type") != "application/pdf":
        raise Invalid(f"{path}.source.base64.media_type: {PDF_MEDIA_TYPE}")
    if kind == "text" and source.get("media_type") != "text/plain":
        raise Invalid(f"{path}.source.text.media_type: {PLAIN_TEXT_MEDIA_TYPE}")


# --- across messages ---------------------------------------------------------------------


def _combine(messages: Sequence[Mapping[str, Any]]) -> list[_Combined]:
    groups: list[_Combined] = []
    for index, message in enumerate(messages):
        role = str(message["role"])
        if not groups or groups[-1].role != role:
            groups.append(_Combined(index, role))
        for position, block in enumerate(_blocks(message["content"])):
            groups[-1].blocks.append((f"messages.{index}.content.{position}", block))
    return groups


def _tool_use_ids(group: _Combined | None) -> list[str]:
    if group is None or group.role != "assistant":
        return []
    return [str(b["id"]) for _path, b in group.blocks if b.get("type") == "tool_use"]


def _check_uses_answered(group: _Combined, following: _Combined | None) -> None:
    uses = _tool_use_ids(group)
    if not uses:
        return
    leading: set[str] = set()
    for _path, block in following.blocks if following is not None else []:
        if block.get("type") != "tool_result":
            break
        leading.add(str(block["tool_use_id"]))
    missing = [use for use in uses if use not in leading]
    if missing:
        raise Invalid(f"messages.{group.index}: {MISSING_RESULTS.format(ids=', '.join(missing))}")


def _check_results_answer(group: _Combined, previous: _Combined | None) -> None:
    uses = set(_tool_use_ids(previous))
    for path, block in group.blocks:
        if block.get("type") == "tool_result" and block["tool_use_id"] not in uses:
            raise Invalid(f"{path}: {ORPHAN_RESULT.format(id=block['tool_use_id'])}")


def _check_breakpoints(body: Mapping[str, Any]) -> None:
    found = sum(1 for item in _cacheable(body) if item.get("cache_control") is not None)
    if found > MAX_CACHE_BREAKPOINTS:
        raise Invalid(TOO_MANY_BREAKPOINTS.format(n=found))


def _cacheable(body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Everything that may carry ``cache_control``: system blocks, tools, content blocks
    (and the blocks inside a tool result)."""
    system = body.get("system")
    if isinstance(system, list):
        yield from system
    yield from body.get("tools") or []
    for message in body["messages"]:
        for block in _blocks(message["content"]):
            yield block
            inner = block.get("content")
            if block.get("type") == "tool_result" and isinstance(inner, list):
                yield from inner
