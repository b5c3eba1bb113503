"""Tool approvals in a Telegram chat, over the fake: the question with its inline
keyboard, presses from the owner and from strangers, duplicates, timeouts, /cancel,
/status while waiting, and parallel calls."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.fakes.telegram_api import StoredMessage, TelegramFake
from tests.telegram.harness import STRANGER, USER, Bot, running_bot
from tests.tools.test_gate import FsSource, ListAudit
from thalos_bot.domain.messages import ToolResultBlock
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.gate import PermissionGate
from thalos_bot.tools.policy import PolicySet, ToolPolicy

pytestmark = pytest.mark.anyio

LONG = "x" * 500


def tools(timeout: float = 60.0) -> tuple[SourceCatalog, FsSource, ListAudit]:
    source, audit = FsSource(), ListAudit()
    policies = PolicySet([ToolPolicy("fs__write_*", action="ask")])
    gate = PermissionGate(policies, timeout=timeout, audit=audit)
    return SourceCatalog([source], policies, gate=gate), source, audit


def write(path: str = "notes.md") -> CallTool:
    return CallTool("fs__write_file", {"path": path, "content": LONG})


async def question(bot: Bot, count: int = 1) -> StoredMessage:
    """The ``count``-th bot message that carried an inline keyboard."""

    def asked() -> list[StoredMessage] | None:
        found = [
            m
            for m in bot.fake.messages(USER)
            if any(v.reply_markup for v in (m.current, *m.history))
        ]
        return found if len(found) >= count else None

    found = await bot.fake.wait_for(asked)
    assert found is not None
    return found[count - 1]


def buttons(message: StoredMessage) -> dict[str, str]:
    markup = message.current.reply_markup or {}
    return {b["text"]: b["callback_data"] for row in markup["inline_keyboard"] for b in row}


async def press(
    bot: Bot, message: StoredMessage, label: str, *, user: int = USER, stale: bool = False
) -> dict[str, Any]:
    message = now(bot, message)
    data = buttons(message)[label] if not stale else stale_data(message, label)
    _, query_id = bot.fake.press_button(
        USER, user, message.message_id, data, first_name="Ann", stale=stale
    )
    answer = await bot.fake.wait_for(lambda: bot.fake.callback_answer(query_id))
    assert answer is not None
    return answer


def stale_data(message: StoredMessage, label: str) -> str:
    for version in message.history:
        for row in (version.reply_markup or {}).get("inline_keyboard", []):
            for button in row:
                if button["text"] == label:
                    return str(button["callback_data"])
    raise AssertionError(f"no {label!r} button was ever on the message")


def now(bot: Bot, message: StoredMessage) -> StoredMessage:
    [current] = [m for m in bot.fake.messages(USER) if m.message_id == message.message_id]
    return current


def tool_results(provider: ScriptedProvider, request: int) -> list[ToolResultBlock]:
    last = provider.requests[request].messages[-1]
    return [b for b in last.content if isinstance(b, ToolResultBlock)]


@contextmanager
def scripted(*replies: Any) -> Iterator[ScriptedProvider]:
    yield ScriptedProvider(list(replies))


async def test_the_owner_approves_after_a_strangers_press_changed_nothing(
    fake: TelegramFake,
) -> None:
    catalog, source, audit = tools()
    provider = ScriptedProvider([[write()], [Say("Written.")]])
    async with running_bot(fake, provider, tools=catalog) as bot:
        bot.say("write my notes")
        asked = await question(bot)
        assert "fs__write_file" in asked.text
        assert "notes.md" in asked.text
        assert "(500 chars)" in asked.text, "the long value is cut"
        assert set(buttons(asked)) == {"Approve", "Approve for this session", "Deny"}
        assert all(1 <= len(d.encode()) <= 64 for d in buttons(asked).values())

        stranger = await press(bot, asked, "Approve", user=STRANGER)
        assert stranger.get("text") is None, "a stranger's press is answered empty"
        assert source.calls == []
        assert now(bot, asked).current.reply_markup is not None, "nothing changed"

        owner = await press(bot, asked, "Approve")
        assert owner["text"] == "✅ Approved"
        texts = await bot.answer(2)
        assert texts[-1] == "Written."
        await bot.fake.wait_for(lambda: "Approved by" in now(bot, asked).text)
        decided = now(bot, asked)
        assert decided.current.reply_markup is None, "the keyboard is gone"
        assert "✅ Approved by Ann." in decided.text

        again = await press(bot, asked, "Approve", stale=True)
        assert again["text"] == "This question is already closed."
        late_deny = await press(bot, asked, "Deny", stale=True)
        assert late_deny["text"] == "This question is already closed."
    assert source.calls == [("write_file", {"path": "notes.md", "content": LONG})]
    assert [(e.decision, e.decided_by) for e in audit.entries] == [("approved", f"telegram:{USER}")]
    assert audit.entries[0].conversation == f"telegram:{USER}"


async def test_deny_tells_the_model_it_was_not_approved(fake: TelegramFake) -> None:
    catalog, source, _ = tools()
    provider = ScriptedProvider([[write()], [Say("Understood, not written.")]])
    async with running_bot(fake, provider, tools=catalog) as bot:
        bot.say("write my notes")
        asked = await question(bot)
        assert (await press(bot, asked, "Deny"))["text"] == "⛔ Denied"
        texts = await bot.answer(2)
        assert texts[-1] == "Understood, not written."
        await bot.fake.wait_for(lambda: "⛔ Denied by Ann." in now(bot, asked).text)
    [result] = tool_results(provider, 1)
    assert result.is_error
    assert "did not approve" in result.content
    assert source.calls == []


async def test_approve_for_the_session_is_not_asked_again(fake: TelegramFake) -> None:
    catalog, source, _ = tools()
    provider = ScriptedProvider(
        [[write("a.md")], [write("b.md")], [Say("Both written.")], [write("c.md")], [Say("Ok.")]]
    )
    async with running_bot(fake, provider, tools=catalog) as bot:
        bot.say("write two files")
        asked = await question(bot)
        await press(bot, asked, "Approve for this session")
        await bot.fake.wait_for(lambda: "Both written." in bot.fake.texts(USER))
        bot.say("and one more")
        await bot.fake.wait_for(lambda: "Ok." in bot.fake.texts(USER))
        questions = [m for m in fake.messages(USER) if "Allow" in m.text]
    assert len(questions) == 1
    assert [args["path"] for _, args in source.calls] == ["a.md", "b.md", "c.md"]


async def test_a_timeout_is_a_denial_and_a_late_press_is_harmless(fake: TelegramFake) -> None:
    catalog, source, audit = tools(timeout=0.3)
    provider = ScriptedProvider([[write()], [Say("Nobody answered.")]])
    async with running_bot(fake, provider, tools=catalog) as bot:
        bot.say("write my notes")
        asked = await question(bot)
        await bot.fake.wait_for(lambda: "Nobody answered." in bot.fake.texts(USER))
        await bot.fake.wait_for(lambda: "Not answered in time" in now(bot, asked).text)
        late = await press(bot, asked, "Approve", stale=True)
        assert late["text"] == "This question is already closed."
    [result] = tool_results(provider, 1)
    assert "was not approved" in result.content
    assert source.calls == []
    assert [e.decision for e in audit.entries] == ["timeout"]


async def test_status_while_waiting_then_cancel_withdraws_the_question(
    fake: TelegramFake,
) -> None:
    catalog, source, audit = tools()
    provider = ScriptedProvider([[write()]])
    async with running_bot(fake, provider, tools=catalog) as bot:
        bot.say("write my notes")
        asked = await question(bot)
        bot.say("/status")
        await bot.fake.wait_for(
            lambda: any(
                "Waiting for your approval of fs__write_file" in t for t in fake.texts(USER)
            )
        )
        bot.say("/cancel")
        await bot.fake.wait_for(lambda: any("[cancelled]" in t for t in fake.texts(USER)))
        await bot.fake.wait_for(lambda: "not run" in now(bot, asked).text)
        assert now(bot, asked).current.reply_markup is None
        late = await press(bot, asked, "Approve", stale=True)
        assert late["text"] == "This question is already closed."
    assert source.calls == []
    assert [e.decision for e in audit.entries] == ["cancelled"]
    assert len(provider.requests) == 1


async def test_parallel_calls_only_the_write_waits(fake: TelegramFake) -> None:
    catalog, source, _ = tools()
    read = CallTool("fs__read_file", {"path": "notes.md"})
    provider = ScriptedProvider([[write(), read], [Say("Done both.")]])
    async with running_bot(fake, provider, tools=catalog) as bot:
        bot.say("read and write")
        asked = await question(bot)
        await bot.fake.wait_for(lambda: source.calls)
        assert source.calls == [("read_file", {"path": "notes.md"})], "the read did not wait"
        await press(bot, asked, "Approve")
        await bot.fake.wait_for(lambda: "Done both." in bot.fake.texts(USER))
    assert {name for name, _ in source.calls} == {"read_file", "write_file"}
    assert [r.is_error for r in tool_results(provider, 1)] == [False, False]
