"""The six commands and the pump's notices, as plain-text Telegram messages."""

from __future__ import annotations

import anyio
import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import CATALOG, USER, running_bot
from thalos_bot.channels import notices
from thalos_bot.providers.scripted import Await, Hang, Say, ScriptedProvider

pytestmark = pytest.mark.anyio


async def test_every_command_round_trips_as_plain_text(fake: TelegramFake) -> None:
    async with running_bot(fake) as bot:
        expected: list[str] = []

        async def command(text: str, check: str) -> None:
            bot.say(text)
            expected.append(check)
            texts = await bot.answer(len(expected))
            assert check in texts[-1], texts[-1]

        await command("/help", "Just type to talk to the agent. Commands:")
        await command("/status", "No session yet")
        await command("/agents", "helper: Helper (default)")
        await command("/new coder", "New session with Coder.")
        await command("/status", "Agent: Coder (coder)")
        await command("/cancel", notices.nothing_to_cancel())
        await command("/end", notices.session_ended())
        await command("/end", notices.no_session())
        await command("/frobnicate", "/frobnicate is not a command I know.")
        await command("/new nobody", "There is no agent called 'nobody'.")
        await command("/HELP@thalos_test_bot", "Just type to talk to the agent.")
    sent = fake.calls("sendMessage", chat_id=USER)
    assert len(sent) == len(expected)
    assert all("parse_mode" not in call.params for call in sent), "notices are plain text"
    assert not bot.provider.requests, "commands never reach the model"
    assert CATALOG.default_id == "helper"


async def test_a_message_while_an_answer_is_written_is_refused(fake: TelegramFake) -> None:
    gate = anyio.Event()
    provider = ScriptedProvider([[Say("Working on it. "), Await(gate.wait), Say("Done.")]])
    async with running_bot(fake, provider) as bot:
        bot.say("long job")
        await fake.wait_for(lambda: provider.requests)
        bot.say("are you there?")
        bot.say("/new")
        texts = await bot.answer(2)
        assert texts == [notices.busy(), notices.busy_command("new")]
        gate.set()
        texts = await bot.answer(3)
    assert texts[-1] == "Working on it. Done."
    assert len(provider.requests) == 1


async def test_cancel_stops_the_answer_and_says_so(fake: TelegramFake) -> None:
    provider = ScriptedProvider([[Say("Thinking about it"), Hang()]])
    async with running_bot(fake, provider) as bot:
        bot.say("a hard question")
        await fake.wait_for(lambda: fake.drafts(USER))
        bot.say("/cancel")
        (text,) = await bot.answer()
    assert text == "Thinking about it\n\n[cancelled]"
