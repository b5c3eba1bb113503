"""Tool approvals in a Matrix room, which has no buttons: one message listing the
choices, answered by a reaction (✅ once, 🔁 for the session, ❌ no) or by a reply
(``yes``, ``session``, ``no``) to that very message.

Only an allowed user decides; a stranger's reaction or reply, a late one (the question
was decided, timed out or withdrawn) and a second one change nothing. The question is
then edited (``m.replace``) to show the outcome and who decided; a withdrawn question
(timeout or ``/cancel``) is edited to say it was not run; when the channel stops, every
open question is denied and edited to say why. Questions and edits go through the
room's outbox like every other message (paced, 429 obeyed, same transaction id on a
retry). A question the homeserver refuses for good is a denial.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import structlog

from thalos_bot.tools.approval import SHUTDOWN, ApprovalAnswer, ApprovalRequest, Verdict
from thalos_bot_matrix.views import OutcomeView, QuestionView

log = structlog.get_logger(__name__)

REACTIONS: dict[str, Verdict] = {
    "✅": "approved",
    "✔️": "approved",
    "👍": "approved",
    "🔁": "approved-session",
    "❌": "denied",
    "👎": "denied",
}
REPLIES: dict[str, Verdict] = {
    "yes": "approved",
    "y": "approved",
    "ok": "approved",
    "approve": "approved",
    "session": "approved-session",
    "always": "approved-session",
    "no": "denied",
    "n": "denied",
    "deny": "denied",
}
OUTCOMES: dict[Verdict, str] = {
    "approved": "✅ Approved",
    "approved-session": "✅ Approved for this session",
    "denied": "⛔ Denied",
}
WITHDRAWN = "⌛ Not answered in time, or cancelled: not run."
SHUT_DOWN = "⏹ Withdrawn: the bot is shutting down. Not run."


def question_text(request: ApprovalRequest) -> str:
    return (
        f"🔐 Allow **{request.tool}**?\n\n```\n{request.preview}\n```\n\n"
        "React ✅ to allow once, 🔁 to allow for this session, ❌ to deny "
        "(or reply yes, session or no)."
    )


def verdict_of_reply(body: str) -> Verdict | None:
    word = body.strip().strip(".!").lower()
    return REPLIES.get(word) or REACTIONS.get(body.strip())


Post = Callable[[str, QuestionView | OutcomeView], None]


@dataclass(slots=True)
class _Open:
    room_id: str
    request: ApprovalRequest
    view: QuestionView
    decided: anyio.Event = field(default_factory=anyio.Event)
    answer: ApprovalAnswer | None = None


class MatrixApprovals:
    def __init__(self, allowed_users: frozenset[str], post: Post) -> None:
        self.allowed_users = allowed_users
        self._post = post
        self._open: list[_Open] = []
        self._closed: deque[tuple[str, str]] = deque(maxlen=256)
        """Questions no longer open: a late answer to one is swallowed, not a message."""
        self._stopping = False

    async def ask(self, room_id: str, request: ApprovalRequest) -> ApprovalAnswer:
        if self._stopping:
            return ApprovalAnswer("denied", SHUTDOWN)
        view = QuestionView(question_text(request))
        entry = _Open(room_id, request, view)
        self._open.append(entry)
        self._post(room_id, view)
        try:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:

                    async def first(event: anyio.Event) -> None:
                        await event.wait()
                        scope.cancel()

                    group.start_soon(first, view.settled)
                    group.start_soon(first, entry.decided)
            if entry.answer is None and view.event_id is None:
                log.warning("matrix_question_undelivered", room=room_id, tool=request.tool)
                return ApprovalAnswer("denied", "error")
            await entry.decided.wait()
        except anyio.get_cancelled_exc_class():
            view.withdrawn = True
            if entry.answer is None:
                self._close(entry, WITHDRAWN)
            raise
        finally:
            if entry in self._open:
                self._open.remove(entry)
            if view.event_id is not None:
                self._closed.append((room_id, view.event_id))
        assert entry.answer is not None
        return entry.answer

    def answer(self, room_id: str, sender: str, target: str, verdict: Verdict | None) -> bool:
        """A reaction or reply to ``target`` by ``sender``: True when it was about an
        open question (decided or not; it is then not a message for the model)."""
        entry = next(
            (e for e in self._open if e.room_id == room_id and e.view.event_id == target), None
        )
        if entry is None:
            return (room_id, target) in self._closed
        if sender not in self.allowed_users:
            log.info("matrix_answer_ignored", reason="sender not allowed")
            return True
        if verdict is None or entry.answer is not None:
            return True
        entry.answer = ApprovalAnswer(verdict, f"matrix:{sender}")
        entry.decided.set()
        self._close(entry, f"{OUTCOMES[verdict]} by {sender}: {entry.request.tool}")
        return True

    def asked(self, room_id: str, target: str) -> bool:
        """Is ``target`` a question the bot asked and still waits on?"""
        return any(e.room_id == room_id and e.view.event_id == target for e in self._open)

    def withdraw_all(self) -> None:
        self._stopping = True
        for entry in list(self._open):
            if entry.answer is not None:
                continue
            entry.answer = ApprovalAnswer("denied", SHUTDOWN)
            entry.view.withdrawn = True
            entry.decided.set()
            self._close(entry, SHUT_DOWN)

    def _close(self, entry: _Open, text: str) -> None:
        self._post(entry.room_id, OutcomeView(entry.view, text))
