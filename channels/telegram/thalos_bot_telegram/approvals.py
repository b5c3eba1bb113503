"""Tool approvals in a Telegram chat: one message with an inline keyboard per question.

The message names the tool and shows a short, escaped view of its arguments, with three
buttons: Approve, Approve for this session, Deny. Each button's ``callback_data`` is
``ap:<token>:<choice>``, the token naming this one question (well under the 64 bytes
Telegram allows).

Only a press by a user in ``allowed_user_ids``, on that very message, decides. Every
press is answered (so the client stops spinning): a stranger's with an empty answer and
no effect; a duplicate or late press (the question was decided, timed out or withdrawn)
with a short "already closed" and no effect. The message is then edited to show the
outcome and who decided, which also removes the keyboard; a withdrawn question (timeout
or ``/cancel``) is edited to say it was not run.
"""

from __future__ import annotations

import html
import secrets
from dataclasses import dataclass, field

import anyio
import structlog
from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, User
from telegram.constants import ParseMode
from telegram.error import TelegramError

from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict

log = structlog.get_logger(__name__)

PREFIX = "ap"
CHOICES: dict[str, Verdict] = {"y": "approved", "s": "approved-session", "n": "denied"}
OUTCOMES: dict[Verdict, str] = {
    "approved": "✅ Approved",
    "approved-session": "✅ Approved for this session",
    "denied": "⛔ Denied",
}
WITHDRAW_BOUND = 10.0
"""Seconds a withdrawn question may take to be marked as such (shielded from cancel)."""


def question_html(request: ApprovalRequest) -> str:
    return (
        f"🔐 Allow <b>{html.escape(request.tool)}</b>?\n<pre>{html.escape(request.preview)}</pre>"
    )


def keyboard(token: str) -> InlineKeyboardMarkup:
    def button(label: str, choice: str) -> InlineKeyboardButton:
        return InlineKeyboardButton(label, callback_data=f"{PREFIX}:{token}:{choice}")

    return InlineKeyboardMarkup(
        [
            [button("Approve", "y"), button("Deny", "n")],
            [button("Approve for this session", "s")],
        ]
    )


@dataclass(slots=True)
class _Open:
    chat_id: int
    message_id: int
    question: str
    decided: anyio.Event = field(default_factory=anyio.Event)
    answer: ApprovalAnswer | None = None


class TelegramApprovals:
    """Open questions by token; :meth:`ask` puts one, :meth:`on_callback` settles it."""

    def __init__(self, bot: Bot, allowed_user_ids: frozenset[int]) -> None:
        self.bot = bot
        self.allowed_user_ids = allowed_user_ids
        self._open: dict[str, _Open] = {}

    async def ask(self, chat_id: int, request: ApprovalRequest) -> ApprovalAnswer:
        token = secrets.token_urlsafe(9)
        question = question_html(request)
        sent = await self.bot.send_message(
            chat_id, question, parse_mode=ParseMode.HTML, reply_markup=keyboard(token)
        )
        entry = _Open(chat_id, sent.message_id, question)
        self._open[token] = entry
        try:
            await entry.decided.wait()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(WITHDRAW_BOUND):
                await self._edit(entry, "⌛ Not answered in time, or cancelled: not run.")
            raise
        finally:
            self._open.pop(token, None)
        assert entry.answer is not None  # set before decided
        return entry.answer

    async def on_callback(self, query: CallbackQuery) -> None:
        """Settle a press, or answer it harmlessly. Never raises: one bad press must not
        stop the channel (logged by error type, never its content)."""
        try:
            await self._settle(query)
        except Exception as exc:  # noqa: BLE001 - a press is handled on its own
            log.error("telegram_press_failed", error=type(exc).__name__)  # noqa: TRY400

    async def _settle(self, query: CallbackQuery) -> None:
        user: object = query.from_user
        data = query.data or ""
        if not isinstance(user, User) or user.id not in self.allowed_user_ids:
            log.debug("telegram_press_ignored", reason="sender not allowed")
            await self._answer(query, None)
            return
        parts = data.split(":")
        entry = self._open.get(parts[1]) if len(parts) == 3 and parts[0] == PREFIX else None
        message = query.message
        on_that_message = (
            entry is not None
            and message is not None
            and message.message_id == entry.message_id
            and message.chat.id == entry.chat_id
        )
        choice = CHOICES.get(parts[-1])
        if entry is None or not on_that_message or choice is None or entry.answer is not None:
            await self._answer(query, "This question is already closed.")
            return
        who = user.first_name or str(user.id)
        entry.answer = ApprovalAnswer(choice, f"telegram:{user.id}")
        entry.decided.set()
        await self._answer(query, OUTCOMES[choice])
        await self._edit(entry, f"{OUTCOMES[choice]} by {html.escape(who)}.")

    async def _answer(self, query: CallbackQuery, text: str | None) -> None:
        try:
            await self.bot.answer_callback_query(query.id, text=text)
        except TelegramError as exc:
            log.info("telegram_press_answer_failed", error=type(exc).__name__)

    async def _edit(self, entry: _Open, outcome: str) -> None:
        try:
            await self.bot.edit_message_text(
                f"{entry.question}\n{outcome}",
                chat_id=entry.chat_id,
                message_id=entry.message_id,
                parse_mode=ParseMode.HTML,
            )
        except TelegramError as exc:
            log.info("telegram_question_edit_failed", error=type(exc).__name__)
