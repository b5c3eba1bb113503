"""Tool approvals on the kit's one flow (:mod:`thalos_bot.channels.approvals.asking`): an
inline keyboard whose ``callback_data`` is ``ap:<token>:<choice>`` (well within the 64
bytes Telegram allows). Only an allowed user's press on that very message decides; every
press is answered, so the client stops spinning: a stranger's with nothing, a late or
duplicate one with "already closed"."""

from __future__ import annotations

import html

import structlog
from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, User
from telegram.error import TelegramError

from thalos_bot.channels.approvals.asking import CLOSED, Asking, Post
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict

log = structlog.get_logger(__name__)

PREFIX = "ap"
CHOICES: dict[str, Verdict] = {"y": "approved", "s": "approved-session", "n": "denied"}


def keyboard(token: str) -> InlineKeyboardMarkup:
    def button(label: str, choice: str) -> InlineKeyboardButton:
        return InlineKeyboardButton(label, callback_data=f"{PREFIX}:{token}:{choice}")

    return InlineKeyboardMarkup(
        [[button("Approve", "y"), button("Deny", "n")], [button("Approve for this session", "s")]]
    )


class TelegramApprovals:
    def __init__(self, bot: Bot, allowed: frozenset[int], post: Post[int, InlineKeyboardMarkup]):
        self.bot = bot
        self.allowed_user_ids = allowed
        self._asking = Asking[int, InlineKeyboardMarkup](post, "telegram")

    async def ask(self, chat: int, request: ApprovalRequest, thread: int | None) -> ApprovalAnswer:
        """Ask in the chat (in the forum topic ``thread``); cancelling withdraws it."""
        token = Asking.token()
        tool, preview = html.escape(request.tool), html.escape(request.preview)
        text = f"🔐 Allow <b>{tool}</b>?\n<pre>{preview}</pre>"
        view = QuestionView(text, keyboard(token), None if thread is None else str(thread))
        return await self._asking.ask(chat, request, token, view)

    def withdraw_all(self) -> None:
        """The channel stops: polling has ended, so no press can be heard any more (and a
        press cannot be taken alone: getUpdates acknowledges by offset)."""
        self._asking.withdraw_all()

    async def on_callback(self, query: CallbackQuery) -> None:
        """Settle a press, or answer it harmlessly; never raises (logged by type)."""
        try:
            user: object = query.from_user
            if not isinstance(user, User) or user.id not in self.allowed_user_ids:
                await self._answer(query, None)  # a stranger's: no effect
                return
            parts = (query.data or "").split(":")
            token = parts[1] if len(parts) == 3 and parts[0] == PREFIX else None
            message = query.message
            outcome = message and self._asking.decide(
                token,
                message.chat.id,
                str(message.message_id),
                CHOICES.get(parts[-1]),
                who=html.escape(user.first_name or str(user.id)),
                decider=f"telegram:{user.id}",
            )
            await self._answer(query, outcome or CLOSED)
        except Exception as exc:  # noqa: BLE001 - a press is handled on its own
            log.error("telegram_press_failed", error=type(exc).__name__)  # noqa: TRY400

    async def _answer(self, query: CallbackQuery, text: str | None) -> None:
        try:
            await self.bot.answer_callback_query(query.id, text=text)
        except TelegramError as exc:
            log.info("telegram_press_answer_failed", error=type(exc).__name__)
