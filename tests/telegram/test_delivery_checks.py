"""How a send in doubt is checked: past the user's messages, never touching the bot's
own earlier messages or notices, within flood control, again when the check itself
fails, and what happens when no message id is known in the chat to start from."""

from __future__ import annotations

import anyio
import pytest
from structlog.testing import capture_logs

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER, running_bot
from thalos_bot.channels.ports import Notice
from thalos_bot.domain.ids import ConversationId
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider

pytestmark = pytest.mark.anyio

ANSWER = "An answer that must arrive exactly once."


async def test_a_notice_waits_until_the_send_in_doubt_is_checked(fake: TelegramFake) -> None:
    # The first live message arrives unconfirmed; the user writes meanwhile, so the bot
    # owes them a "still working" notice. Sent before the check, that notice would sit
    # among the ids being probed (and a probe would rewrite it with the answer's text).
    gate = anyio.Event()
    provider = ScriptedProvider([[Say("First words, "), Await(gate.wait), Say("then the rest.")]])
    fake.timeout_next("sendMessage", close=True, user_says="hello?")
    async with running_bot(fake, provider, streaming="edit", request_timeout=0.3) as bot:
        bot.say("hello")
        await bot.answer(2)  # the live message and the notice
        gate.set()
        await fake.wait_for(lambda: fake.texts(USER)[0] == "First words, then the rest.")
    live, notice = fake.messages(USER)
    assert fake.texts(USER) == ["First words, then the rest.", notice.text]
    assert not notice.history, "the notice was never rewritten"
    sends = fake.calls("sendMessage", chat_id=USER)
    assert [c.params["text"].strip() for c in sends] == ["First words,", notice.raw_text]
    edits = fake.calls("editMessageText", chat_id=USER)
    probes = [c.params["message_id"] for c in edits if c.at < sends[1].at]
    said = fake.incoming_ids(USER)[-1]  # "hello?", written while the send was in doubt
    assert probes == [said, live.message_id], "the user's message, then the answer's: found"


async def test_a_check_waits_out_flood_control(fake: TelegramFake) -> None:
    fake.stall_next("sendMessage")
    fake.fail_next("editMessageText", 429, retry_after=1)
    async with running_bot(
        fake, ScriptedProvider([[Say(ANSWER)]]), streaming="off", request_timeout=0.3
    ) as bot:
        bot.say("hello")
        await fake.wait_for(lambda: fake.texts(USER) == [ANSWER], 10)
    limited, probe = fake.calls("editMessageText", chat_id=USER)
    assert limited.status == 429
    assert probe.at >= limited.at + 1.0
    assert fake.retry_after_violations == []
    assert len(fake.calls("sendMessage", chat_id=USER)) == 2, "resent once found missing"


async def test_a_check_lost_in_transit_is_made_again(fake: TelegramFake) -> None:
    fake.timeout_next("sendMessage", close=True)  # arrived, unconfirmed
    fake.drop_next("editMessageText")  # the first check is lost too
    async with running_bot(
        fake, ScriptedProvider([[Say(ANSWER)]]), streaming="off", request_timeout=0.3
    ) as bot:
        bot.say("hello")
        await fake.wait_for(lambda: fake.texts(USER) == [ANSWER], 10)
    dropped, probe = fake.calls("editMessageText", chat_id=USER)
    assert dropped.fault == "drop"
    assert probe.params["message_id"] == dropped.params["message_id"]
    assert len(fake.calls("sendMessage", chat_id=USER)) == 1, "found, never resent"
    assert fake.texts(USER) == [ANSWER]


async def test_the_check_looks_past_the_users_messages(fake: TelegramFake) -> None:
    fake.timeout_next("sendMessage", close=True, user_says="one")
    async with running_bot(
        fake, ScriptedProvider([[Say(ANSWER)]]), streaming="off", request_timeout=0.3
    ) as bot:
        bot.say("hello")
        await bot.answer(2)  # the answer, and the reply to "one"
    probes = fake.calls("editMessageText", chat_id=USER)
    said = fake.incoming_ids(USER)[-1]  # "one", written while the send was in doubt
    answer = next(m for m in fake.messages(USER) if m.text == ANSWER)
    assert [p.params["message_id"] for p in probes] == [said, answer.message_id]
    assert probes[0].response is not None
    assert "can't be edited" in probes[0].response["description"]
    assert fake.texts(USER).count(ANSWER) == 1


async def test_with_no_id_known_in_the_chat_a_send_in_doubt_is_sent_again(
    fake: TelegramFake,
) -> None:
    # A notice to a chat nothing was received from: there is no id to start checking
    # from, so the bot errs on the side of delivering it (and says so in the log).
    fake.add_chat(USER)
    fake.drop_next("sendMessage")
    with capture_logs() as logs:
        async with running_bot(fake, request_timeout=0.3) as bot:
            await bot.pair.adapter.deliver(ConversationId(str(USER)), Notice("Reminder."))
            await fake.wait_for(lambda: fake.texts(USER) == ["Reminder."])
    assert any(e["event"] == "telegram_send_unverifiable" for e in logs)
    assert [c.fault for c in fake.calls("sendMessage", chat_id=USER)] == ["drop", None]


@pytest.mark.parametrize("applied", [True, False], ids=["arrived", "not-arrived"])
async def test_a_later_part_in_doubt_is_checked_above_the_parts_before(
    fake: TelegramFake, *, applied: bool
) -> None:
    answer = "\n\n".join(f"Paragraph {n}: " + "word " * 150 for n in range(8))  # two parts
    fake.spare_next("sendMessage")  # the first part goes through
    if applied:
        fake.timeout_next("sendMessage", close=True)
    else:
        fake.drop_next("sendMessage")
    async with running_bot(
        fake, ScriptedProvider([[Say(answer)]]), streaming="off", request_timeout=0.3
    ) as bot:
        bot.say("hello")
        await fake.wait_for(lambda: len(fake.texts(USER)) == 2, 10)
    first, second = fake.messages(USER)
    assert " ".join(fake.texts(USER)).split() == answer.split()
    assert not first.history, "no check rewrote a message"
    assert not second.history
    probe = fake.calls("editMessageText", chat_id=USER)[0]
    assert probe.params["message_id"] > first.message_id, "above the parts before"
    if applied:
        assert probe.params["message_id"] == second.message_id, "found at once"
    assert len(fake.calls("sendMessage", chat_id=USER)) == (2 if applied else 3)
