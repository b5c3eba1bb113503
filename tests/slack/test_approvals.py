"""Tool approvals as Block Kit buttons, decided only by an allowed user's press on the
question itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.slack_api import SlackFake
from tests.fakes.slack_state import Message
from tests.slack.harness import STRANGER, USER, Bot, running_bot
from tests.tools.test_gate import FsSource, ListAudit
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.gate import PermissionGate
from thalos_bot.tools.policy import PolicySet, ToolPolicy

pytestmark = pytest.mark.anyio


def tools(timeout: float = 60.0) -> tuple[SourceCatalog, FsSource, ListAudit]:
    source, audit = FsSource(), ListAudit()
    policies = PolicySet([ToolPolicy("fs__write_*", action="ask")])
    gate = PermissionGate(policies, timeout=timeout, audit=audit)
    return SourceCatalog([source], policies, gate=gate), source, audit


def write() -> CallTool:
    return CallTool("fs__write_file", {"path": "notes.md", "content": "x" * 300})


async def question(bot: Bot) -> Message:
    def asked() -> Message | None:
        for message in bot.fake.messages(bot.fake.dm(USER)):
            if any(b.get("type") == "actions" for b in message.blocks):
                return message
        return None

    return await bot.fake.wait_for(asked)


async def test_the_owner_approves_after_a_strangers_press_changed_nothing(
    fake: SlackFake, tmp_path: Path
) -> None:
    catalog, source, audit = tools()
    provider = ScriptedProvider([[write()], [Say("Written.")]])
    async with running_bot(
        fake, provider, tmp_path=tmp_path, tools=catalog, streaming="off"
    ) as bot:
        bot.say("write my notes")
        asked = await question(bot)
        dm = fake.dm(USER)
        assert "fs__write_file" in asked.text
        assert "notes.md" in asked.text
        stranger = fake.press(STRANGER, dm, asked.ts, "thalos_approve")
        await fake.wait_for(lambda: stranger.acked)
        assert source.calls == []
        assert any(b.get("type") == "actions" for b in asked.blocks), "nothing changed"
        owner = fake.press(USER, dm, asked.ts, "thalos_approve")
        await fake.wait_for(lambda: owner.acked)
        await fake.wait_for(lambda: "Approved by" in asked.text)
        await fake.wait_for(lambda: fake.texts(dm)[-1] == "Written.")
    assert not any(b.get("type") == "actions" for b in asked.blocks), "the buttons are gone"
    assert source.calls == [("write_file", {"path": "notes.md", "content": "x" * 300})]
    assert [(e.decision, e.decided_by) for e in audit.entries] == [("approved", f"slack:{USER}")]


async def test_deny_is_told_to_the_model(fake: SlackFake, tmp_path: Path) -> None:
    catalog, source, _ = tools()
    provider = ScriptedProvider([[write()], [Say("Not written.")]])
    async with running_bot(
        fake, provider, tmp_path=tmp_path, tools=catalog, streaming="off"
    ) as bot:
        bot.say("write my notes")
        asked = await question(bot)
        fake.press(USER, fake.dm(USER), asked.ts, "thalos_deny")
        await fake.wait_for(lambda: fake.texts(fake.dm(USER))[-1] == "Not written.")
    assert source.calls == []
    assert "Denied" in asked.text


async def test_a_question_left_unanswered_is_withdrawn(fake: SlackFake, tmp_path: Path) -> None:
    catalog, source, _ = tools(timeout=0.3)
    provider = ScriptedProvider([[write()], [Say("Timed out.")]])
    async with running_bot(
        fake, provider, tmp_path=tmp_path, tools=catalog, streaming="off"
    ) as bot:
        bot.say("write my notes")
        asked = await question(bot)
        await fake.wait_for(lambda: "not run" in asked.text)
    assert source.calls == []
    assert not any(b.get("type") == "actions" for b in asked.blocks)
