"""Provider-neutral conversation history.

A session's history is a list of :class:`Message`; each holds content blocks. The shape
mirrors what chat models with tool use need (text, a tool call, its result) and nothing
provider-specific, so it can be stored as JSON and mapped onto any provider.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    id: str
    name: str
    input: Mapping[str, Any]
    type: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ImageBlock:
    """An image the person sent. Only the hash is kept here: the bytes live once in the
    media store and are read when a request is built."""

    media_hash: str
    media_type: str
    size: int = 0
    width: int = 0
    height: int = 0
    """Pixels, as sent (0: not known; a history stored before they were recorded)."""
    type: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class DocumentBlock:
    """A PDF the person sent, by hash like :class:`ImageBlock`."""

    media_hash: str
    media_type: str = "application/pdf"
    size: int = 0
    name: str = ""
    pages: int = 0
    """0: not known (unreadable to us, or stored before pages were recorded)."""
    type: Literal["document"] = "document"


MediaBlock = ImageBlock | DocumentBlock
Block = TextBlock | ToolUseBlock | ToolResultBlock | ImageBlock | DocumentBlock


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: tuple[Block, ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    @property
    def starts_turn(self) -> bool:
        """A user message with the person's words or media (an image, a PDF) and no tool
        results: the only place a history may be cut. (After an interrupted tool round
        the next words are merged into the tool-result message; cutting there would
        orphan those results.)"""
        return (
            self.role == "user"
            and any(isinstance(b, TextBlock | ImageBlock | DocumentBlock) for b in self.content)
            and not any(isinstance(b, ToolResultBlock) for b in self.content)
        )

    @property
    def media(self) -> tuple[MediaBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ImageBlock | DocumentBlock))

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextBlock(text),))


def block_to_json(block: Block) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}
    if isinstance(block, ImageBlock):
        image: dict[str, Any] = {
            "type": "image",
            "media_hash": block.media_hash,
            "media_type": block.media_type,
            "size": block.size,
        }
        if block.width and block.height:
            image |= {"width": block.width, "height": block.height}
        return image
    if isinstance(block, DocumentBlock):
        document: dict[str, Any] = {
            "type": "document",
            "media_hash": block.media_hash,
            "media_type": block.media_type,
            "size": block.size,
            "name": block.name,
        }
        if block.pages:
            document["pages"] = block.pages
        return document
    return {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": block.content,
        "is_error": block.is_error,
    }


def block_from_json(data: Mapping[str, Any]) -> Block:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(str(data["text"]))
    if kind == "tool_use":
        return ToolUseBlock(str(data["id"]), str(data["name"]), dict(data["input"]))
    if kind == "tool_result":
        return ToolResultBlock(
            str(data["tool_use_id"]), str(data["content"]), bool(data.get("is_error", False))
        )
    if kind == "image":
        return ImageBlock(
            str(data["media_hash"]),
            str(data["media_type"]),
            int(data["size"]),
            int(data.get("width", 0)),
            int(data.get("height", 0)),
        )
    if kind == "document":
        return DocumentBlock(
            str(data["media_hash"]),
            str(data["media_type"]),
            int(data["size"]),
            str(data.get("name", "")),
            int(data.get("pages", 0)),
        )
    raise ValueError(f"unknown content block type {kind!r}")


def message_to_json(message: Message) -> str:
    return json.dumps(
        {"role": message.role, "content": [block_to_json(b) for b in message.content]},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def message_from_json(raw: str) -> Message:
    data = json.loads(raw)
    role = data["role"]
    if role not in ("user", "assistant"):
        raise ValueError(f"unknown role {role!r}")
    return Message(role, tuple(block_from_json(b) for b in data["content"]))


def append_message(history: Sequence[Message], message: Message) -> list[Message]:
    """Append ``message``, merging it into the last message when both share a role.

    Keeps roles alternating, which providers require: e.g. the tool results of a
    cancelled turn followed by the next user text become one user message.
    """
    out = list(history)
    if out and out[-1].role == message.role:
        out[-1] = Message(message.role, out[-1].content + message.content)
    else:
        out.append(message)
    return out
