"""The console cannot show an image: it prints one line naming it."""

from __future__ import annotations

import io

import pytest

from thalos_bot.console.render import ConsoleAdapter
from thalos_bot.domain.events import ToolImage
from thalos_bot.domain.ids import ConversationId, SessionId

pytestmark = pytest.mark.anyio


async def test_a_tool_image_is_a_line_naming_the_tool() -> None:
    out = io.StringIO()
    adapter = ConsoleAdapter(out, color=False)
    image = ToolImage(SessionId("s"), "draw__chart", "image/png", b"\x89PNG" + b"0" * 1996)
    await adapter.deliver(ConversationId("console"), image)
    assert out.getvalue() == "🖼 Image from draw__chart (image/png, 2,000 bytes)\n"
    assert "0000" not in out.getvalue(), "never the bytes"
