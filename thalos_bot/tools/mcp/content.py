"""Turn an MCP ``CallToolResult`` into the text the model reads.

Text blocks pass through; images, audio and binary resources become a short placeholder;
structured content is shown as JSON when the result carries no text.
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
