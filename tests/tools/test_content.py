"""How MCP results read to the model."""

from __future__ import annotations

import base64

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from thalos_bot.tools.mcp.content import render_result

_DATA = base64.b64encode(b"0123456789").decode()


def test_text_blocks_are_joined() -> None:
    result = CallToolResult(
        content=[TextContent(type="text", text="one"), TextContent(type="text", text="two")]
    )
    assert render_result(result) == "one\ntwo"


def test_non_text_content_becomes_placeholders() -> None:
    result = CallToolResult(
        content=[
            ImageContent(type="image", data=_DATA, mime_type="image/png"),
            AudioContent(type="audio", data=_DATA, mime_type="audio/wav"),
            ResourceLink(type="resource_link", name="report", uri="file:///r.txt"),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(uri="file:///b.bin", blob=_DATA),
            ),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="file:///t.txt", text="inside"),
            ),
        ],
        structured_content={"ignored": True},
    )
    assert render_result(result).splitlines() == [
        "[image: image/png, 10 bytes, not shown]",
        "[audio: audio/wav, 10 bytes, not shown]",
        "[resource link: report <file:///r.txt>]",
        "[resource <file:///b.bin>: binary, 10 bytes, not shown]",
        "[resource <file:///t.txt>]",
        "inside",
    ]


def test_structured_content_is_json_when_there_is_no_text() -> None:
    result = CallToolResult(content=[], structured_content={"b": 1, "a": [1, "é"]})
    assert render_result(result) == '{"a": [1, "é"], "b": 1}'


def test_empty_results_say_so() -> None:
    assert render_result(CallToolResult(content=[])) == "(no output)"
    assert render_result(CallToolResult(content=[], is_error=True)) == (
        "The tool reported an error without details."
    )
