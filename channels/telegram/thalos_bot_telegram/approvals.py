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
or ``/cancel``) is edited to say it was not run. When the channel stops, every open
question is withdrawn at once and denied (see :meth:`TelegramApprovals.withdraw_all`).

The open questions are the kit's (:mod:`thalos_bot.channels.approvals.asking`); the
question and the edit go through the chat's outbox and sender like every other
message: paced, held while Telegram's retry_after runs, checked before being sent again
when a send is in doubt, and never sent while another send's check is under way. A
question Telegram refuses for good is a denial.
"""

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


class TelegramApprovals:
    """The kit's open questions (:class:`~thalos_bot.channels.approvals.asking.Asking`)
    asked with an inline keyboard; :meth:`on_callback` decodes a press."""

    def __init__(
        self, bot: Bot, allowed_user_ids: frozenset[int], post: Post[int, InlineKeyboardMarkup]
    ) -> None:
        self.bot = bot
        self.allowed_user_ids = allowed_user_ids
        self._asking = Asking[int, InlineKeyboardMarkup](post, "telegram")

    async def ask(
        self, chat_id: int, request: ApprovalRequest, thread: int | None = None
    ) -> ApprovalAnswer:
        """Ask in the chat (in the forum topic ``thread``, if any) and wait for the
        answer; cancelling withdraws the question."""
        token = Asking.token()
        topic = None if thread is None else str(thread)
        view = QuestionView(question_html(request), keyboard(token), topic)
        return await self._asking.ask(chat_id, request, token, view)

    def withdraw_all(self) -> None:
        """The channel stops: deny every open question and edit it to say why.

        Polling ends as soon as stop begins, so that updates not yet fetched stay with
        Telegram for the next start; a press made from now on is never seen. (Reading
        presses alone during the grace is no way out: getUpdates acknowledges by offset,
        so a press cannot be taken while a message queued before it is left for later.)
        So each open question is withdrawn at once (see
        :meth:`~thalos_bot.channels.approvals.asking.Asking.withdraw_all`)."""
        self._asking.withdraw_all()

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
        token = parts[1] if len(parts) == 3 and parts[0] == PREFIX else None
        message = query.message
        outcome = None
        if message is not None:
            outcome = self._asking.decide(
                token,
                message.chat.id,
                str(message.message_id),
                CHOICES.get(parts[-1]),
                who=html.escape(user.first_name or str(user.id)),
                decider=f"telegram:{user.id}",
            )
        await self._answer(query, CLOSED if outcome is None else outcome)

    async def _answer(self, query: CallbackQuery, text: str | None) -> None:
        try:
            await self.bot.answer_callback_query(query.id, text=text)
        except TelegramError as exc:
            log.info("telegram_press_answer_failed", error=type(exc).__name__)
