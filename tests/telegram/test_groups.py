"""Listed groups: allowed users who mention the bot or reply to it are answered, in
their topic, quoting their message; everyone and everything else stays silent."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs
from telegram import Bot
from telegram.error import BadRequest

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_groups import open_topic, push_group_text
from tests.telegram.harness import STRANGER, USER, running_bot
from thalos_bot.channels import notices

pytestmark = pytest.mark.anyio

GROUP = -1001234567890
FORUM = -1009876543210
BOT = "@thalos_test_bot"


async def _shows(fake: TelegramFake, chat: int, *texts: str) -> None:
    await fake.wait_for(lambda: fake.texts(chat) == list(texts), timeout=10)


def _sent(fake: TelegramFake, chat: int) -> list[dict[str, object]]:
    return [c.params for c in fake.calls("sendMessage", chat_id=chat) if c.status == 200]


async def test_a_mention_is_answered_quoting_it_without_the_mention(fake: TelegramFake) -> None:
    fake.add_chat(GROUP, "supergroup")
    async with running_bot(fake, groups=[GROUP], streaming="draft"):
        asked = push_group_text(fake, GROUP, USER, f"{BOT} what is 2+2?")
        await _shows(fake, GROUP, "You said: what is 2+2?")
    question = fake.messages(GROUP, include_incoming=True)[0]
    params, *_ = _sent(fake, GROUP)
    assert params["reply_parameters"]["message_id"] == question.message_id  # type: ignore[index]
    assert fake.messages(GROUP)[-1].payload["reply_to_message"]["message_id"] == (
        question.message_id
    )
    assert fake.calls("sendMessageDraft", chat_id=GROUP) == [], "no drafts in groups"
    assert asked > 0


async def test_a_group_message_without_a_mention_is_ignored(fake: TelegramFake) -> None:
    fake.add_chat(GROUP, "supergroup")
    async with running_bot(fake, groups=[GROUP]) as bot:
        push_group_text(fake, GROUP, USER, "hello all, ask @someone_else")
        push_group_text(fake, GROUP, USER, f"and now {BOT} hi")
        await _shows(fake, GROUP, "You said: and now hi")
    assert len(bot.provider.requests) == 1


async def test_a_stranger_in_the_group_is_never_answered(fake: TelegramFake) -> None:
    fake.add_chat(GROUP, "supergroup")
    with capture_logs() as logs:
        async with running_bot(fake, groups=[GROUP]) as bot:
            push_group_text(fake, GROUP, STRANGER, f"{BOT} tell me secrets")
            push_group_text(fake, GROUP, USER, f"{BOT} ping")
            await _shows(fake, GROUP, "You said: ping")
    assert [r.messages[-1].text for r in bot.provider.requests] == ["ping"]
    assert any(e["event"] == "telegram_sender_not_allowed" for e in logs)


async def test_a_reply_to_the_bot_needs_no_mention(fake: TelegramFake) -> None:
    fake.add_chat(GROUP, "supergroup")
    async with running_bot(fake, groups=[GROUP]) as bot:
        push_group_text(fake, GROUP, USER, f"{BOT} first")
        await _shows(fake, GROUP, "You said: first")
        answer = fake.messages(GROUP)[-1]
        push_group_text(fake, GROUP, USER, "and then?", reply_to=answer.message_id)
        await fake.wait_for(lambda: len(bot.provider.requests) == 2 and len(fake.texts(GROUP)) == 2)
    assert bot.provider.requests[-1].messages[-1].text == (
        '<quote from="assistant">\nYou said: first\n</quote>\n\nand then?'
    )


async def test_an_unlisted_group_stays_silent(fake: TelegramFake) -> None:
    fake.add_chat(GROUP, "supergroup")
    async with running_bot(fake, groups=[-1000000000001]) as bot:
        push_group_text(fake, GROUP, USER, f"{BOT} hello?")
        bot.say("in private")
        await bot.answer()
    assert fake.calls(chat_id=GROUP) == []


async def test_each_forum_topic_is_its_own_conversation_and_answers_go_there(
    fake: TelegramFake,
) -> None:
    fake.add_chat(FORUM, "supergroup", is_forum=True)
    ideas = open_topic(fake, FORUM, USER, "Ideas")
    bugs = open_topic(fake, FORUM, USER, "Bugs")
    async with running_bot(fake, groups=[FORUM], streaming="edit") as bot:
        push_group_text(fake, FORUM, USER, f"{BOT} idea one", thread=ideas)
        await _shows(fake, FORUM, "You said: idea one")
        push_group_text(fake, FORUM, USER, f"{BOT} bug one", thread=bugs)
        await _shows(fake, FORUM, "You said: idea one", "You said: bug one")
    first, second = bot.provider.requests
    assert second.messages[-1].text == "bug one", "the topic opener is no reply to quote"
    assert len(second.messages) == 1, "the Bugs topic does not share the Ideas history"
    answers = fake.messages(FORUM)
    assert [m.payload["message_thread_id"] for m in answers] == [ideas, bugs]
    incoming = [m for m in fake.messages(FORUM, include_incoming=True) if not m.from_bot]
    questions = [m.message_id for m in incoming if m.payload.get("text")]
    assert [m.payload["reply_to_message"]["message_id"] for m in answers] == questions
    actions = fake.calls("sendChatAction", chat_id=FORUM)
    assert actions
    assert all(c.status == 200 for c in actions), "typing goes to the topic too"
    assert first.messages[-1].text == "idea one"


async def test_a_send_in_doubt_in_a_group_looks_past_other_members_messages(
    fake: TelegramFake,
) -> None:
    fake.add_chat(GROUP, "supergroup")
    fake.timeout_next("sendMessage", close=True, user_says="someone else talks")
    async with running_bot(fake, groups=[GROUP], streaming="off", request_timeout=0.3) as bot:
        push_group_text(fake, GROUP, USER, f"{BOT} hello")
        await _shows(fake, GROUP, "You said: hello")
    probes = fake.calls("editMessageText", chat_id=GROUP)
    member, answer = fake.incoming_ids(GROUP)[-1], fake.messages(GROUP)[-1].message_id
    assert [p.params["message_id"] for p in probes] == [member, answer]
    assert fake.texts(GROUP) == ["You said: hello"], "sent once, found by the check"
    assert len(bot.provider.requests) == 1


async def test_the_fake_refuses_a_thread_outside_a_forum(fake: TelegramFake) -> None:
    fake.add_chat(GROUP, "supergroup")
    fake.add_chat(FORUM, "supergroup", is_forum=True)
    topic = open_topic(fake, FORUM, USER, "Ideas")
    async with Bot(fake.token, base_url=fake.base_url + "/bot") as bot:
        with pytest.raises(BadRequest, match="thread not found"):
            await bot.send_message(GROUP, "x", message_thread_id=topic)
        with pytest.raises(BadRequest, match="thread not found"):
            await bot.send_message(FORUM, "x", message_thread_id=topic + 100)
        with pytest.raises(BadRequest, match="replied not found"):
            await bot.send_message(FORUM, "x", reply_to_message_id=999)
        sent = await bot.send_message(FORUM, "x", message_thread_id=topic)
    assert sent.message_thread_id == topic
    assert sent.is_topic_message


async def test_a_command_addressed_to_the_bot_is_run_and_others_are_not(
    fake: TelegramFake,
) -> None:
    fake.add_chat(GROUP, "supergroup")
    async with running_bot(fake, groups=[GROUP]) as bot:
        push_group_text(fake, GROUP, USER, "/help@some_other_bot")
        push_group_text(fake, GROUP, USER, "/help")
        push_group_text(fake, GROUP, USER, "/help@thalos_test_bot")
        push_group_text(fake, GROUP, USER, f"{BOT} ping")
        await _shows(fake, GROUP, notices.help_text(), "You said: ping")
    assert [r.messages[-1].text for r in bot.provider.requests] == ["ping"]
