"""The fake's inline keyboards, driven by the real python-telegram-bot: presses,
answerCallbackQuery, editMessageReplyMarkup, and the Bot API's checks."""

from __future__ import annotations

import pytest
from telegram import InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import BadRequest

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_callbacks import QUERY_INVALID
from tests.fakes.test_telegram_fake import CHAT, fake, make_bot

pytestmark = pytest.mark.anyio
__all__ = ["fake"]

KEYS = InlineKeyboardMarkup([[InlineKeyboardButton("Yes", callback_data="ap:t:y")]])


async def test_a_press_arrives_and_its_query_is_answered_once(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        sent = await bot.send_message(CHAT, "Allow?", reply_markup=KEYS)
        [stored] = fake.messages(CHAT)
        assert stored.current.reply_markup == KEYS.to_dict(), "reply_markup is recorded"
        _, query_id = fake.press_button(CHAT, CHAT, sent.message_id, "ap:t:y")
        [update] = await bot.get_updates(allowed_updates=["message", "callback_query"])
        query = update.callback_query
        assert query is not None
        assert (query.id, query.data) == (query_id, "ap:t:y")
        assert query.message is not None
        assert query.message.message_id == sent.message_id
        assert await bot.answer_callback_query(query_id, text="Approved")
        assert fake.callback_answer(query_id) == {
            "callback_query_id": query_id,
            "text": "Approved",
        }
        with pytest.raises(BadRequest, match=f"(?i){QUERY_INVALID}"):
            await bot.answer_callback_query(query_id)
        with pytest.raises(BadRequest, match=f"(?i){QUERY_INVALID}"):
            await bot.answer_callback_query("123")
        last = fake.calls("answerCallbackQuery")[-1]
        assert last.status == 400
        assert last.response is not None
        assert last.response["description"] == f"Bad Request: {QUERY_INVALID}"


async def test_an_expired_query_cannot_be_answered(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        sent = await bot.send_message(CHAT, "Allow?", reply_markup=KEYS)
        _, query_id = fake.press_button(CHAT, CHAT, sent.message_id, "ap:t:y")
        fake.expire_callback(query_id)
        with pytest.raises(BadRequest, match=f"(?i){QUERY_INVALID}"):
            await bot.answer_callback_query(query_id)


async def test_only_buttons_that_are_there_can_be_pressed(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        sent = await bot.send_message(CHAT, "Allow?", reply_markup=KEYS)
        with pytest.raises(ValueError, match="no button"):
            fake.press_button(CHAT, CHAT, sent.message_id, "forged")
        await bot.edit_message_text("Decided.", chat_id=CHAT, message_id=sent.message_id)
        [stored] = fake.messages(CHAT)
        assert stored.current.reply_markup is None, "an edit without markup drops the keyboard"
        with pytest.raises(ValueError, match="no button"):
            fake.press_button(CHAT, CHAT, sent.message_id, "ap:t:y")
        fake.press_button(CHAT, CHAT, sent.message_id, "ap:t:y", stale=True)


async def test_inline_keyboards_are_checked_like_the_bot_api(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    too_long = InlineKeyboardMarkup([[InlineKeyboardButton("X", callback_data="d" * 65)]])
    no_action = {"inline_keyboard": [[{"text": "plain"}]]}
    async with make_bot(fake) as bot:
        with pytest.raises(BadRequest, match=r"(?i)BUTTON_DATA_INVALID"):
            await bot.send_message(CHAT, "Allow?", reply_markup=too_long)
        with pytest.raises(BadRequest, match=r"(?i)Text buttons are unallowed"):
            await bot._post(
                "sendMessage", {"chat_id": CHAT, "text": "x", "reply_markup": no_action}
            )
        at_limit = InlineKeyboardMarkup([[InlineKeyboardButton("X", callback_data="é" * 32)]])
        sent = await bot.send_message(CHAT, "Allow?", reply_markup=at_limit)
        assert sent.reply_markup == at_limit, "64 bytes (32 two-byte characters) is allowed"


async def test_edit_message_reply_markup(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        sent = await bot.send_message(CHAT, "Allow?", reply_markup=KEYS)
        with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
            await bot.edit_message_reply_markup(CHAT, sent.message_id, reply_markup=KEYS)
        await bot.edit_message_reply_markup(CHAT, sent.message_id)
        [stored] = fake.messages(CHAT)
        assert stored.current.reply_markup is None
        assert stored.text == "Allow?"
        with pytest.raises(BadRequest, match=r"(?i)message to edit not found"):
            await bot.edit_message_reply_markup(CHAT, 999)
