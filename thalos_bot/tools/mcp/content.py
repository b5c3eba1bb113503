"""Turn an MCP ``CallToolResult`` into the text the model reads.

Text blocks pass through; images, audio and binary resources become a short placeholder;
structured content is shown as JSON when the result carries no text. The images a
channel can show (:func:`result_images`) also travel on as :class:`ToolImage` events,
so the user sees them once the answer is out.
"""

from __future__ import annotations

import base64
import binascii
import json

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

from thalos_bot.domain.events import ToolImage
from thalos_bot.domain.ids import SessionId


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def render_block(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[image: {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]"
    if isinstance(block, AudioContent):
        return f"[audio: {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]"
    if isinstance(block, ResourceLink):
        return f"[resource link: {block.name} <{block.uri}>]"
    resource = block.resource
    if isinstance(resource, BlobResourceContents):
        kind = resource.mime_type or "binary"
        return (
            f"[resource <{resource.uri}>: {kind}, {_decoded_size(resource.blob)} bytes, not shown]"
        )
    return f"[resource <{resource.uri}>]\n{resource.text}"


def render_result(result: CallToolResult) -> str:
    """The text of ``result``; never empty."""
    parts = [render_block(block) for block in result.content]
    has_text = any(isinstance(b, TextContent | EmbeddedResource) for b in result.content)
    if not has_text and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True))
    text = "\n".join(p for p in parts if p)
    if text:
        return text
    return "The tool reported an error without details." if result.is_error else "(no output)"


SHOWN_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp"})
"""Image types a channel can show the user as a photo."""
MAX_SHOWN_IMAGE_BYTES = 10 * 1024 * 1024
"""Telegram takes photos up to 10 MB; a larger image stays a placeholder only."""
MAX_SHOWN_IMAGES = 10
"""At most this many images of one result are shown to the user."""


def result_images(
    result: CallToolResult, session_id: SessionId, tool: str
) -> tuple[ToolImage, ...]:
    """The images in ``result`` worth showing the user, as events."""
    images: list[ToolImage] = []
    for block in result.content:
        if isinstance(block, ImageContent):
            media_type, data = block.mime_type, block.data
        elif isinstance(block, EmbeddedResource) and isinstance(
            block.resource, BlobResourceContents
        ):
            media_type, data = block.resource.mime_type or "", block.resource.blob
        else:
            continue
        if media_type.lower() not in SHOWN_IMAGE_TYPES:
            continue
        try:
            decoded = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            continue
        if 0 < len(decoded) <= MAX_SHOWN_IMAGE_BYTES:
            images.append(ToolImage(session_id, tool, media_type.lower(), decoded))
    return tuple(images[:MAX_SHOWN_IMAGES])
