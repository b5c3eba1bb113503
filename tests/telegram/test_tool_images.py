"""Images tools make during a turn go out as photos after the answer, exactly once."""

from __future__ import annotations

import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER, running_bot
from thalos_bot.channels import notices
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.events import ToolImage
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.tools.types import ToolCall, ToolContext, ToolResult, ToolSpec

pytestmark = pytest.mark.anyio

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
CAPTION = notices.tool_image("draw__chart", "image/png", len(PNG))


class Drawer:
    """One tool, ``draw__chart``, whose result carries a PNG."""

    def specs_for(self, agent: AgentDefinition) -> list[ToolSpec]:
        return [ToolSpec("draw__chart", "draws")]

    async def call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        image = ToolImage(context.session_id, call.name, "image/png", PNG)
        return ToolResult(f"[image: image/png, {len(PNG)} bytes, not shown]", images=(image,))


def _provider() -> ScriptedProvider:
    return ScriptedProvider([[Say("Drawing."), CallTool("draw__chart")], [Say("Here it is.")]])


async def _photos(fake: TelegramFake) -> list[str]:
    return [m.text for m in fake.messages(USER) if m.kind == "photo"]


async def test_a_tool_image_is_sent_as_a_photo_after_the_answer(fake: TelegramFake) -> None:
    async with running_bot(fake, _provider(), streaming="off") as bot:
        bot.runtime.tools = Drawer()
        bot.say("chart please")
        await fake.wait_for(lambda: any(m.kind == "photo" for m in fake.messages(USER)))
    kinds = [(m.kind, m.text) for m in fake.messages(USER)]
    assert kinds == [("text", "Drawing.\n\nHere it is."), ("photo", CAPTION)]
    sent = [c for c in fake.calls("sendPhoto") if c.status == 200]
    assert len(sent) == 1


async def test_under_flood_control_the_photo_waits_and_is_sent_once(fake: TelegramFake) -> None:
    fake.fail_next("sendPhoto", 429, retry_after=1)
    async with running_bot(fake, _provider(), streaming="off") as bot:
        bot.runtime.tools = Drawer()
        bot.say("chart please")
        await fake.wait_for(lambda: any(m.kind == "photo" for m in fake.messages(USER)))
    assert [m.text for m in fake.messages(USER) if m.kind == "photo"] == [CAPTION]
    assert [c.status for c in fake.calls("sendPhoto")] == [429, 200]
    assert fake.retry_after_violations == []


async def test_a_photo_in_doubt_is_checked_not_sent_twice(fake: TelegramFake) -> None:
    fake.timeout_next("sendPhoto", close=True)  # it arrives; the answer is lost
    async with running_bot(fake, _provider(), streaming="off", request_timeout=0.3) as bot:
        bot.runtime.tools = Drawer()
        bot.say("chart please")
        await fake.wait_for(lambda: fake.calls("editMessageCaption"))
        bot.say("still there?")
        await fake.wait_for(lambda: "You said: still there?" in fake.texts(USER))
    assert [m.text for m in fake.messages(USER) if m.kind == "photo"] == [CAPTION]
    assert len(fake.calls("sendPhoto")) == 1
    (probe,) = fake.calls("editMessageCaption")
    assert "not modified" in str(probe.response)
