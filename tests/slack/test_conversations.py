"""Who gets an answer, and where: DMs, mention-started threads, nobody else."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.slack_api import SlackFake
from tests.slack.harness import CHANNEL, STRANGER, UNLISTED, USER, running_bot
from thalos_bot.providers.scripted import Say, ScriptedProvider

pytestmark = pytest.mark.anyio


async def test_a_direct_message_is_answered_in_the_dm(fake: SlackFake, tmp_path: Path) -> None:
    provider = ScriptedProvider([[Say("Hello **there**")]])
    async with running_bot(fake, provider, tmp_path=tmp_path, streaming="edit") as bot:
        bot.say("hi")
        texts = await bot.answer()
    assert texts == ["Hello *there*"]
    (message,) = fake.messages(fake.dm(USER))
    assert message.thread_ts is None, "a DM is answered at its top level"
