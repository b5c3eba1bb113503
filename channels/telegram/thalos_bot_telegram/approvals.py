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

The question and the edit go through the chat's outbox and sender like every other
message (see :mod:`thalos_bot_telegram.questions`): paced, held while Telegram's
retry_after runs, checked before being sent again when a send is in doubt, and never
sent while another send's check is under way. A question Telegram refuses for good is
a denial.
"""

from __future__ import annotations

import html
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import structlog
from telegram import Bot, CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, User
from telegram.error import TelegramError

from thalos_bot.tools.approval import SHUTDOWN, ApprovalAnswer, ApprovalRequest, Verdict
from thalos_bot_telegram.questions import OutcomeView, QuestionView

log = structlog.get_logger(__name__)

PREFIX = "ap"
CHOICES: dict[str, Verdict] = {"y": "approved", "s": "approved-session", "n": "denied"}
OUTCOMES: dict[Verdict, str] = {
    "approved": "✅ Approved",
    "approved-session": "✅ Approved for this session",
    "denied": "⛔ Denied",
}
WITHDRAWN = "⌛ Not answered in time, or cancelled: not run."
SHUT_DOWN = "⏹ Withdrawn: the bot is shutting down. Not run."


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


Post = Callable[[int, QuestionView | OutcomeView], None]
"""Puts a question (or the edit closing one) in a chat's outbox."""


@dataclass(slots=True)
class _Open:
    chat_id: int
    view: QuestionView
    decided: anyio.Event = field(default_factory=anyio.Event)
    answer: ApprovalAnswer | None = None


class TelegramApprovals:
    """Open questions by token; :meth:`ask` puts one, :meth:`on_callback` settles it."""

    def __init__(self, bot: Bot, allowed_user_ids: frozenset[int], post: Post) -> None:
        self.bot = bot
        self.allowed_user_ids = allowed_user_ids
        self._post = post
        self._open: dict[str, _Open] = {}
        self._stopping = False

    async def ask(
        self, chat_id: int, request: ApprovalRequest, thread: int | None = None
    ) -> ApprovalAnswer:
        """Ask in the chat (in the forum topic ``thread``, if any) and wait for the
        answer; cancelling withdraws the question. Once the channel stops, nothing is
        asked: the answer is a denial (see :meth:`withdraw_all`)."""
        if self._stopping:
            log.info("telegram_question_withdrawn", chat=chat_id, tool=request.tool, asked=False)
            return ApprovalAnswer("denied", SHUTDOWN)
        token = secrets.token_urlsafe(9)
        view = QuestionView(question_html(request), keyboard(token), thread)
        entry = _Open(chat_id, view)
        self._open[token] = entry
        self._post(chat_id, view)
        try:
            await _first(view.settled, entry.decided)
            if entry.answer is None and view.message_id is None:
                log.warning("telegram_question_undelivered", chat=chat_id, tool=request.tool)
                return ApprovalAnswer("denied", "error")
            await entry.decided.wait()
        except anyio.get_cancelled_exc_class():
            view.withdrawn = True  # not sent if it is not out yet
            self._close(entry, WITHDRAWN)
            raise
        finally:
            self._open.pop(token, None)
        assert entry.answer is not None  # set before decided
        return entry.answer

    def withdraw_all(self) -> None:
        """The channel stops: deny every open question and edit it to say why.

        Polling ends as soon as stop begins, so that updates not yet fetched stay with
        Telegram for the next start; a press made from now on is never seen. (Reading
        presses alone during the grace is no way out: getUpdates acknowledges by offset,
        so a press cannot be taken while a message queued before it is left for later.)
        Rather than leave the turn waiting out the shutdown grace for an answer that
        cannot come, and then be cancelled, each open question is withdrawn at once: the
        person sees that it was, the tool call is refused ("the bot is shutting down"),
        and the turn can finish within the grace. Approving during the grace would also
        start a tool that the grace's end may cut off halfway; a call not run is the
        safer outcome."""
        self._stopping = True
        for entry in list(self._open.values()):
            if entry.answer is not None:
                continue
            entry.answer = ApprovalAnswer("denied", SHUTDOWN)
            entry.view.withdrawn = True  # not sent if it is not out yet
            entry.decided.set()
            log.info("telegram_question_withdrawn", chat=entry.chat_id, asked=True)
            self._close(entry, SHUT_DOWN)

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
        choice = CHOICES.get(parts[-1])
        if (
            entry is None
            or message is None
            or message.chat.id != entry.chat_id
            or entry.view.message_id not in {None, message.message_id}
            or choice is None
            or entry.answer is not None
        ):
            await self._answer(query, "This question is already closed.")
            return
        if entry.view.message_id is None:
            # Pressed while its send is still being checked: the keyboard is its own.
            entry.view.shown(message.message_id)
        who = user.first_name or str(user.id)
        entry.answer = ApprovalAnswer(choice, f"telegram:{user.id}")
        entry.decided.set()
        self._close(entry, f"{OUTCOMES[choice]} by {html.escape(who)}.")
        await self._answer(query, OUTCOMES[choice])

    async def _answer(self, query: CallbackQuery, text: str | None) -> None:
        try:
            await self.bot.answer_callback_query(query.id, text=text)
        except TelegramError as exc:
            log.info("telegram_press_answer_failed", error=type(exc).__name__)

    def _close(self, entry: _Open, outcome: str) -> None:
        """Have the question edited to say how it ended (its keyboard goes with it)."""
        view = entry.view
        self._post(entry.chat_id, OutcomeView(view, f"{view.html}\n{outcome}"))


async def _first(*events: anyio.Event) -> None:
    """Return once any of ``events`` is set."""
    async with anyio.create_task_group() as group:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        for event in events:
            group.start_soon(wait, event)
