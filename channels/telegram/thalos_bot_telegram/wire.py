"""Telegram's wire for the kit's delivery engine: the Bot API calls, and what they carry.

Every message is sent as HTML (:mod:`thalos_bot_telegram.markdown`) unless the engine
asks for it plain; a forum topic is named on every call (``message_thread_id``), an
answer's first message in a group quotes the one it answers (``reply_parameters``, sent
even if that message was deleted meanwhile), and a draft (``sendMessageDraft``, private
chats only) shows the latest tool activity under the text when it fits.
A sendMessage in doubt is checked by the chat's sender (:mod:`thalos_bot_telegram.sender`)
with the exact fields it was sent with (:meth:`TelegramWire.fields`).
"""

from __future__ import annotations

from dataclasses import replace

from telegram import Bot, InlineKeyboardMarkup, InputFile, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import TelegramError

from thalos_bot.channels.delivery.failure import Classified
from thalos_bot.channels.delivery.wire import Outgoing
from thalos_bot.channels.markdown.html import escape
from thalos_bot.channels.text.measure import utf16_len
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot_telegram.errors import classify
from thalos_bot_telegram.limits import LIMITS, MAX_UNITS
from thalos_bot_telegram.markdown import to_html
from thalos_bot_telegram.uncertain import QuestionFields, TextFields

Markup = InlineKeyboardMarkup


class TelegramWire:
    name = "telegram"

    def __init__(self, bot: Bot, *, chat_min_interval: float, global_rate: float) -> None:
        self.bot = bot
        self.limits = replace(LIMITS, chat_min_interval=chat_min_interval, global_rate=global_rate)

    def render(self, source: str) -> str:
        return to_html(source)

    def classify(self, exc: Exception) -> Classified | None:
        return classify(exc) if isinstance(exc, TelegramError) else None

    @staticmethod
    def fields(message: Outgoing[Markup]) -> TextFields | QuestionFields:
        """The text fields of a sendMessage or edit carrying ``message``."""
        if message.controls is not None:
            return {
                "text": message.text,
                "parse_mode": ParseMode.HTML,
                "reply_markup": message.controls,
            }
        if message.plain:
            return {"text": message.text}
        return {"text": message.text, "parse_mode": ParseMode.HTML}

    async def send(self, chat: int, message: Outgoing[Markup]) -> str:
        quoted = number(message.reply_to)
        reply = (
            ReplyParameters(quoted, allow_sending_without_reply=True)
            if quoted is not None
            else None
        )
        sent = await self.bot.send_message(
            chat,
            message_thread_id=number(message.thread),
            reply_parameters=reply,
            **self.fields(message),
        )
        return str(sent.message_id)

    async def edit(self, chat: int, ref: str, message: Outgoing[Markup]) -> None:
        await self.bot.edit_message_text(chat_id=chat, message_id=int(ref), **self.fields(message))

    async def upload(
        self, chat: int, image: ToolImage | VoiceClip, caption: Outgoing[Markup]
    ) -> str:
        thread = number(caption.thread)
        if isinstance(image, VoiceClip):
            seconds = None if image.duration is None else max(1, round(image.duration))
            voice = InputFile(image.data, filename=image.name)
            send = self.bot.send_voice if image.voice else self.bot.send_audio
            sent = await send(
                chat, voice, duration=seconds, caption=caption.text, message_thread_id=thread
            )
        else:
            sent = await self.bot.send_photo(
                chat, photo=image.data, caption=caption.text, message_thread_id=thread
            )
        return str(sent.message_id)

    async def typing(self, chat: int, thread: str | None) -> None:
        await self.bot.send_chat_action(chat, ChatAction.TYPING, message_thread_id=number(thread))

    async def draft(self, chat: int, draft_id: int, message: Outgoing[Markup]) -> None:
        fields = self.fields(message)
        activity = message.activity
        if activity and utf16_len(message.text) + utf16_len(activity) + 2 <= MAX_UNITS:
            if message.plain:
                fields["text"] = f"{fields['text']}\n\n{activity}"
            else:
                fields["text"] = f"{fields['text']}\n\n<i>{escape(activity)}</i>"
        await self.bot.send_message_draft(chat, draft_id, **fields)


def number(ref: str | None) -> int | None:
    """A kit reference (a thread, a message) as Telegram numbers it; None when it is no
    Telegram id."""
    return int(ref) if ref is not None and ref.lstrip("-").isdigit() else None
