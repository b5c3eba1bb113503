"""Tool approvals as an inline keyboard (:mod:`thalos_bot.channels.approvals.buttons`).
Every press is answered, so the client stops spinning (a stranger's with nothing)."""

from __future__ import annotations

import html

import structlog
from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import TelegramError

from thalos_bot.channels.approvals.asking import Post
from thalos_bot.channels.approvals.buttons import Button, ButtonApprovals, ButtonData
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalRequest

log = structlog.get_logger(__name__)

DATA = ButtonData("ap:{token}:{verdict}", {"approved": "y", "approved-session": "s", "denied": "n"})
"""A button's ``callback_data`` (Telegram allows 64 bytes)."""


def question(request: ApprovalRequest) -> str:
    tool, preview = html.escape(request.tool), html.escape(request.preview)
    return f"🔐 Allow <b>{tool}</b>?\n<pre>{preview}</pre>"


def keyboard(_: str, buttons: list[Button]) -> InlineKeyboardMarkup:
    once, session, deny = (InlineKeyboardButton(b.label, callback_data=b.data) for b in buttons)
    return InlineKeyboardMarkup([[once, deny], [session]])


class TelegramApprovals(ButtonApprovals[int, InlineKeyboardMarkup]):
    def __init__(self, bot: Bot, seats: Seats, post: Post[int, InlineKeyboardMarkup]):
        super().__init__(post, "telegram", seats, DATA, question=question, markup=keyboard)
        self.bot = bot

    async def on_callback(self, query: CallbackQuery) -> None:
        """Settle a press, or answer it harmlessly; never raises (logged by type)."""
        try:
            user, message = query.from_user, query.message
            chat, mid = (message.chat.id, str(message.message_id)) if message else (0, "")
            who = html.escape(user.first_name or str(user.id))
            said = self.pressed(query.data or "", chat, mid, user=str(user.id), who=who)
            await self.bot.answer_callback_query(query.id, text=said)
        except TelegramError as exc:
            log.info("telegram_press_answer_failed", error=type(exc).__name__)
        except Exception as exc:  # noqa: BLE001 - a press is handled on its own
            log.error("telegram_press_failed", error=type(exc).__name__)  # noqa: TRY400
