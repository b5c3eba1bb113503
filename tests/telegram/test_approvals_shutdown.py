"""Approval questions when the daemon stops: polling ends at once, so no press can be
heard any more; every open question is withdrawn there and then (edited to say so, its
keyboard gone), the tool call is refused as "shutting down", and the turn finishes
within the grace instead of waiting it out and ending cancelled."""

from __future__ import annotations

import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER, running_bot
from tests.telegram.test_approvals import buttons, now, question, tool_results, tools, write
from thalos_bot.channels.approvals.asking import SHUT_DOWN
from thalos_bot.providers.scripted import Say, ScriptedProvider

pytestmark = pytest.mark.anyio

GRACE = 30.0
"""Longer than any wait in the test: a question left open would outlast them all."""


async def test_stopping_withdraws_the_open_question_and_the_turn_ends_with_its_answer(
    fake: TelegramFake,
) -> None:
    catalog, source, audit = tools()
    provider = ScriptedProvider([[write()], [write("again.md")], [Say("Stopped before writing.")]])
    async with running_bot(fake, provider, tools=catalog, pump={"shutdown_grace": GRACE}) as bot:
        bot.say("write my notes")
        asked = await question(bot)
        assert set(buttons(asked)) == {"Approve", "Approve for this session", "Deny"}
        polls = len(fake.calls("getUpdates"))

        bot.pump.stop()
        texts = await bot.answer(2)
        assert texts[-1] == "Stopped before writing."
        assert await fake.wait_for(lambda: now(bot, asked).text.endswith(SHUT_DOWN))
        withdrawn = now(bot, asked)
        assert withdrawn.current.reply_markup is None, "the keyboard is gone"
        assert len(fake.messages(USER)) == 2, "the second call was not asked"
        assert bot.pump.running_turns == 0, "done well within the grace"
    for request in (1, 2):
        [result] = tool_results(provider, request)
        assert "shutting down" in str(result.content)
        assert "did not approve" not in str(result.content), "nobody said no"
    assert source.calls == []
    assert [(e.decision, e.decided_by) for e in audit.entries] == [
        ("denied", "shutdown"),
        ("denied", "shutdown"),
    ]
    assert len(fake.calls("getUpdates")) <= polls + 1, "polling ended when stop began"
