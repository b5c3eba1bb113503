"""An approval question is delivered like every other message: under flood control it
waits out retry_after and still arrives (rather than being lost, leaving the turn to
wait for an answer to a question nobody saw); it goes ahead of an answer's streamed
text; a send in doubt is checked, keyboard and all, rather than asked twice; and in a
forum topic it is asked in that topic."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from tests.fakes.telegram_api import RecordedCall, TelegramFake
from tests.fakes.telegram_groups import open_topic, push_group_text
from tests.telegram.harness import USER, running_bot
from tests.telegram.test_approvals import (
    LONG,
    buttons,
    now,
    press,
    question,
    tool_results,
    tools,
    write,
)
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider

pytestmark = pytest.mark.anyio

PREAMBLE = "Let me write that down."


def asking(fake: TelegramFake) -> list[RecordedCall]:
    """The sendMessage calls that carried the question (answered or not)."""
    return [c for c in fake.calls("sendMessage") if "reply_markup" in c.params]


def questions_shown(fake: TelegramFake) -> int:
    return sum(1 for m in fake.messages(USER) if "Allow" in m.text)


async def test_a_question_refused_by_flood_control_arrives_after_retry_after(
    fake: TelegramFake,
) -> None:
    catalog, source, audit = tools()
    provider = ScriptedProvider([[write()], [Say("Written.")]])
    fake.fail_next("sendMessage", 429, retry_after=1)
    async with running_bot(fake, provider, tools=catalog) as bot:
        bot.say("write my notes")
        asked = await question(bot)
        tries = await fake.wait_for(lambda: asking(fake)[1:] and asking(fake))
        assert [c.status for c in tries] == [429, 200], "refused once, then asked"
        assert (await press(bot, asked, "Approve"))["text"] == "✅ Approved"
        await fake.wait_for(lambda: "Written." in fake.texts(USER))
        await fake.wait_for(lambda: "Approved by" in now(bot, asked).text)
        assert now(bot, asked).current.reply_markup is None, "the keyboard is gone"
    assert fake.retry_after_violations == [], "nothing reached the chat before retry_after"
    assert questions_shown(fake) == 1
    assert source.calls == [("write_file", {"path": "notes.md", "content": LONG})]
    assert [e.decision for e in audit.entries] == ["approved"]


async def test_the_question_goes_ahead_of_streamed_text_held_by_flood_control(
    fake: TelegramFake,
) -> None:
    catalog, source, _ = tools()

    async def preview_refused() -> object:
        return await fake.wait_for(lambda: [c for c in fake.calls("sendMessage") if c.status])

    provider = ScriptedProvider([[Say(PREAMBLE), Await(preview_refused), write()], [Say("Ok.")]])
    fake.fail_next("sendMessage", 429, retry_after=1)  # the live preview of the answer
    async with running_bot(fake, provider, tools=catalog, streaming="edit") as bot:
        bot.say("write my notes")
        asked = await question(bot)
        await press(bot, asked, "Approve")
        await fake.wait_for(lambda: any("Ok." in t for t in fake.texts(USER)))
    sends = [c for c in fake.calls("sendMessage") if c.status == 200]
    assert "reply_markup" in sends[0].params, "the question went first once the wait was over"
    assert any(PREAMBLE in str(c.params.get("text")) for c in sends[1:]), "then the answer"
    assert fake.retry_after_violations == []
    assert questions_shown(fake) == 1
    assert [name for name, _ in source.calls] == ["write_file"]


async def test_a_question_in_doubt_is_checked_with_its_keyboard_not_asked_twice(
    fake: TelegramFake,
) -> None:
    catalog, source, _ = tools()
    provider = ScriptedProvider([[write()], [Say("Written.")]])
    fake.fail_next("sendMessage", 502, applied=True)  # posted, but answered 502
    async with running_bot(fake, provider, tools=catalog) as bot:
        bot.say("write my notes")
        asked = await question(bot)
        (probe,) = await fake.wait_for(lambda: fake.calls("editMessageText"))
        assert probe.params["message_id"] == asked.message_id
        assert probe.status == 400, "not modified: the question is there, keyboard intact"
        assert now(bot, asked).current.reply_markup is not None
        assert (await press(bot, asked, "Approve"))["text"] == "✅ Approved"
        await fake.wait_for(lambda: "Written." in fake.texts(USER))
    assert len(asking(fake)) == 1, "asked once"
    assert questions_shown(fake) == 1
    assert [name for name, _ in source.calls] == ["write_file"]


async def test_a_question_telegram_refuses_for_good_is_a_denial(fake: TelegramFake) -> None:
    catalog, source, audit = tools()
    provider = ScriptedProvider([[write()], [Say("Not written.")]])
    fake.fail_next("sendMessage", 403)  # "bot was blocked by the user"
    with capture_logs() as logs:
        async with running_bot(fake, provider, tools=catalog) as bot:
            bot.say("write my notes")
            await fake.wait_for(lambda: "Not written." in fake.texts(USER))
    assert source.calls == []
    assert [(e.decision, e.decided_by) for e in audit.entries] == [("denied", "error")]
    assert any(e["event"] == "telegram_question_undelivered" for e in logs)
    [result] = tool_results(provider, 1)
    assert result.is_error


async def test_a_question_in_a_forum_topic_is_asked_there(fake: TelegramFake) -> None:
    forum = -1009876543210
    fake.add_chat(forum, "supergroup", is_forum=True)
    topic = open_topic(fake, forum, USER, "Notes")
    catalog, source, _ = tools()
    provider = ScriptedProvider([[write()], [Say("Written.")]])
    async with running_bot(fake, provider, tools=catalog, groups=[forum]):
        push_group_text(fake, forum, USER, "@thalos_test_bot write my notes", thread=topic)
        (asked,) = await fake.wait_for(
            lambda: [m for m in fake.messages(forum) if m.current.reply_markup]
        )
        assert asked.payload["message_thread_id"] == topic
        data = buttons(asked)["Approve"]
        _, query_id = fake.press_button(forum, USER, asked.message_id, data, first_name="Ann")
        await fake.wait_for(lambda: fake.callback_answer(query_id))
        await fake.wait_for(lambda: "Written." in fake.texts(forum))
    assert [name for name, _ in source.calls] == ["write_file"]
