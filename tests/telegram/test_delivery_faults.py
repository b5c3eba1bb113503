"""The final text is delivered exactly once, whatever Telegram does: flood control
(retry_after obeyed to the second), a send in doubt (checked, then adopted or sent
again), an HTML parse error (sent as plain text). The whole fault matrix is in
test_delivery_matrix.py."""

from __future__ import annotations

import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER, fake_token, running_bot
from thalos_bot.providers.scripted import Fail, Say, ScriptedProvider
from thalos_bot_telegram import TOKEN_ENV

pytestmark = pytest.mark.anyio

ANSWER = (
    "The final text of an answer must arrive exactly once: never twice after a "
    "timeout, never lost after flood control, and never half of it."
)


def streamed(text: str = ANSWER, delay: float = 0.01) -> ScriptedProvider:
    return ScriptedProvider(
        [[Say(*[text[i : i + 8] for i in range(0, len(text), 8)], delay=delay)]]
    )


def squeeze(texts: list[str]) -> str:
    """The texts joined, without whitespace (Telegram trims it at message edges)."""
    return "".join("".join(texts).split())


@pytest.mark.parametrize("mode", ["draft", "edit", "off"])
async def test_429_on_the_final_message_is_waited_out(fake: TelegramFake, mode: str) -> None:
    method = "editMessageText" if mode == "edit" else "sendMessage"
    async with running_bot(fake, streamed(), streaming=mode) as bot:
        bot.say("hello")
        if mode == "edit":
            await fake.wait_for(lambda: fake.calls("sendMessage", chat_id=USER))
        fake.fail_next(method, 429, retry_after=1)
        await fake.wait_for(lambda: fake.texts(USER) == [ANSWER], 10)
    refused = [c for c in fake.calls(method, chat_id=USER) if c.status == 429]
    assert len(refused) == 1
    after = [c for c in fake.calls(chat_id=USER) if c.at > refused[0].at]
    assert after, "the answer was completed after the 429"
    assert min(c.at for c in after) >= refused[0].at + 1.0, "nothing sent before retry_after"
    assert fake.retry_after_violations == []
    assert len(fake.messages(USER)) == 1


async def test_earned_flood_control_is_obeyed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Telegram's real pace (1 message/s per chat, no burst) against a bot configured to go
    # twenty times faster: every 429 Telegram hands out must be waited out in full.
    with TelegramFake(fake_token(), per_chat_interval=1.0, burst=1, global_per_second=0) as strict:
        monkeypatch.setenv(TOKEN_ENV, strict.token)
        provider = ScriptedProvider(
            [[Say(*[ANSWER[i : i + 4] for i in range(0, len(ANSWER), 4)], delay=0.02)]]
        )
        async with running_bot(strict, provider, streaming="edit") as bot:
            bot.say("hello")
            await strict.wait_for(lambda: strict.texts(USER) == [ANSWER], 15)
        assert any(c.status == 429 for c in strict.calls(chat_id=USER)), "flood control hit"
        assert strict.retry_after_violations == []
        assert len(strict.messages(USER)) == 1


@pytest.mark.parametrize("close", [False, True], ids=["no-answer", "connection-closed"])
async def test_a_final_message_that_arrived_unacknowledged_is_not_sent_again(
    fake: TelegramFake, *, close: bool
) -> None:
    fake.timeout_next("sendMessage", close=close)  # processed by Telegram; the answer is lost
    async with running_bot(fake, streamed(), streaming="draft", request_timeout=0.5) as bot:
        bot.say("hello")
        await fake.wait_for(lambda: fake.texts(USER) == [ANSWER], 10)
        bot.say("and again")  # the chat goes on normally afterwards
        await bot.answer(2)
    assert fake.texts(USER) == [ANSWER, "You said: and again"]
    assert len(fake.calls("sendMessage", chat_id=USER)) == 2
    (probe,) = fake.calls("editMessageText", chat_id=USER)
    assert probe.params["message_id"] == fake.messages(USER)[0].message_id
    assert probe.response is not None
    assert "not modified" in probe.response["description"]


async def test_a_final_message_that_did_not_arrive_is_sent_again(fake: TelegramFake) -> None:
    fake.stall_next("sendMessage")  # Telegram never gets to it; the client times out
    async with running_bot(fake, streamed(), streaming="off", request_timeout=0.3) as bot:
        bot.say("hello")
        await fake.wait_for(lambda: fake.texts(USER) == [ANSWER], 10)
    stalled, resent = fake.calls("sendMessage", chat_id=USER)
    assert stalled.fault == "stall"
    (probe,) = fake.calls("editMessageText", chat_id=USER)
    assert stalled.at < probe.at < resent.at, "checked before it was sent again"
    assert probe.response is not None
    assert "not found" in probe.response["description"]


async def test_a_streamed_message_in_doubt_is_found_and_edited_on(fake: TelegramFake) -> None:
    fake.timeout_next("sendMessage")  # the first streamed part arrives; its id is not told
    async with running_bot(
        fake, streamed(delay=0.02), streaming="edit", request_timeout=0.3
    ) as bot:
        bot.say("hello")
        await fake.wait_for(lambda: fake.texts(USER) == [ANSWER], 10)
    assert len(fake.calls("sendMessage", chat_id=USER)) == 1, "never sent again"
    (message,) = fake.messages(USER)
    assert message.history, "the message found was edited on to the whole answer"


async def test_an_edit_that_may_have_failed_is_made_again(fake: TelegramFake) -> None:
    async with running_bot(fake, streamed(), streaming="edit", request_timeout=0.3) as bot:
        bot.say("hello")
        await fake.wait_for(lambda: fake.calls("sendMessage", chat_id=USER))
        fake.timeout_next("editMessageText", close=True)
        await fake.wait_for(lambda: fake.texts(USER) == [ANSWER], 10)
    assert len(fake.messages(USER)) == 1
    assert any(c.fault == "close" for c in fake.calls("editMessageText"))


async def test_a_part_telegram_cannot_parse_is_sent_as_plain_text(fake: TelegramFake) -> None:
    answer = "Some **bold** text & a `snippet`."
    fake.fail_next(
        "sendMessage",
        400,
        description="Bad Request: can't parse entities: Unsupported start tag at byte offset 5",
    )
    async with running_bot(fake, ScriptedProvider([[Say(answer)]])) as bot:
        bot.say("hello")
        assert await bot.answer() == [answer]
    first, second = fake.calls("sendMessage", chat_id=USER)
    assert first.params.get("parse_mode") == "HTML"
    assert first.status == 400
    assert "parse_mode" not in second.params
    assert second.params["text"] == answer


async def test_a_failed_turn_shows_its_partial_text_and_the_error(fake: TelegramFake) -> None:
    provider = ScriptedProvider([[Say("Half an ans", "wer"), Fail("The model fell over.")]])
    async with running_bot(fake, provider) as bot:
        bot.say("hello")
        (text,) = await bot.answer()
    assert text == "Half an answer\n\n[error] The model fell over."
