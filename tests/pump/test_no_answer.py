"""A turn that ends with no text tells the user so, once, instead of saying nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pump.harness import running_pump
from thalos_bot.channels import notices
from thalos_bot.channels.ports import Notice
from thalos_bot.domain.events import TurnCompleted
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.providers.scripted import Reply as ScriptedReply
from thalos_bot.tools.types import ToolCall, ToolContext, ToolResult, ToolSpec

pytestmark = pytest.mark.anyio

NO_ANSWER = "The model returned no answer."


class OneTool:
    def specs_for(self, agent: Any) -> list[ToolSpec]:
        return [ToolSpec("kb__lookup", "look something up")]

    async def call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        return ToolResult("42")


SILENT: dict[str, list[ScriptedReply]] = {
    "an empty answer": [[]],
    "a whitespace-only answer": [[Say("\n", " \n")]],
    "a tool round, then nothing": [[CallTool("kb__lookup", {"q": "x"})], []],
}


@pytest.mark.parametrize("name", list(SILENT))
async def test_a_turn_without_text_gets_one_notice(name: str) -> None:
    provider = ScriptedProvider([*SILENT[name], [Say("Now I answer.")]])
    async with running_pump(provider) as h:
        h.runtime.tools = OneTool()
        await h.source.send("hello?").wait()
        await h.source.send("again").wait()
    assert notices.no_answer() == NO_ANSWER
    assert h.adapter.notices() == [NO_ANSWER], "told once, for the silent turn only"
    first, second = h.adapter.terminals()
    assert isinstance(first, TurnCompleted)
    assert not first.text.strip()
    deliveries = h.adapter.of()
    told = next(i for i, d in enumerate(deliveries) if isinstance(d, Notice))
    assert deliveries.index(first) < told < deliveries.index(second), "right after the turn"
    assert isinstance(second, TurnCompleted)
    assert second.text == "Now I answer."


async def test_an_answer_with_text_gets_no_notice() -> None:
    async with running_pump(ScriptedProvider([[Say("Hi.")]])) as h:
        await h.source.send("hello").wait()
    assert h.adapter.notices() == []
