"""Tool approvals on the kit's flow (:mod:`thalos_bot.channels.approvals.asking`): an
inline keyboard with ``callback_data`` ``ap:<token>:<choice>`` (Telegram allows 64 bytes).
Every press is answered, so the client stops spinning (a stranger's with nothing)."""

from __future__ import annotations

import html

import structlog
from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import TelegramError

from thalos_bot.channels.approvals.asking import CHOICES, Asking, Post
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict

log = structlog.get_logger(__name__)

PREFIX = "ap"
CODES: dict[str, Verdict] = {"y": "approved", "s": "approved-session", "n": "denied"}


def keyboard(token: str) -> InlineKeyboardMarkup:
    once, session, deny = (
        InlineKeyboardButton(label, callback_data=f"{PREFIX}:{token}:{code}")
        for (_, label), code in zip(CHOICES, "ysn", strict=True)
    )
    return InlineKeyboardMarkup([[once, deny], [session]])


class TelegramApprovals:
    def __init__(self, bot: Bot, seats: Seats, post: Post[int, InlineKeyboardMarkup]):
        self.bot = bot
        self._asking = Asking[int, InlineKeyboardMarkup](post, "telegram", seats)
        self.withdraw_all = self._asking.withdraw_all

    async def ask(
        self, chat: int, request: ApprovalRequest, *, thread: str | None = None
    ) -> ApprovalAnswer:
        """Asked in the forum topic ``thread`` of the chat, if any."""
        token = Asking.token()
        tool, preview = html.escape(request.tool), html.escape(request.preview)
        text = f"🔐 Allow <b>{tool}</b>?\n<pre>{preview}</pre>"
        view = QuestionView(text, keyboard(token), thread)
        return await self._asking.ask(chat, request, token, view)

    async def on_callback(self, query: CallbackQuery) -> None:
        """Settle a press, or answer it harmlessly; never raises (logged by type)."""
        try:
            user, message = query.from_user, query.message
            parts = (query.data or "").split(":")
            chat, mid = (message.chat.id, str(message.message_id)) if message else (0, "")
            token = parts[1] if len(parts) == 3 and parts[0] == PREFIX and mid else None
            who = html.escape(user.first_name or str(user.id))
            said = self._asking.answer(
                token, chat, mid, CODES.get(parts[-1]), user=str(user.id), who=who
            )
            await self.bot.answer_callback_query(query.id, text=said)
        except TelegramError as exc:
            log.info("telegram_press_answer_failed", error=type(exc).__name__)
        except Exception as exc:  # noqa: BLE001 - a press is handled on its own
            log.error("telegram_press_failed", error=type(exc).__name__)  # noqa: TRY400
