"""One chat's outbox: the answers and notices it still has to show, in order.

The pump's deliveries land here without waiting for the platform (``deliver`` must
return promptly): each updates the desired state, and the chat's sender works through it. A
notice (or a tool-approval question) that arrives while an answer is still streaming
goes out at once rather than after the answer (it is about now: "still working",
"cancelling", "Allow fs__write_file?"); once an answer is complete, whatever follows
waits until its final text is out, so the order the user reads is the order things
happened. One exception: a command's reply (``/status`` just after an answer) goes
before the files still queued (tool images, the answer read aloud, each an upload that
can take a while), never before an answer's text; the files keep their own order.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

import anyio

from thalos_bot.channels import notices
from thalos_bot.channels.delivery.photo import PhotoView
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.delivery.view import View
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.pacing.gate import ChatGate
from thalos_bot.channels.ports import Delivery, Notice, TextUpdate, TurnStarted
from thalos_bot.channels.text.fences import scan
from thalos_bot.domain.events import ToolImage, TurnCompleted, TurnFailed, VoiceClip

A = TypeVar("A")
"""The transport's address of a chat (opaque to the kit: Telegram's chat id, a Slack
channel and thread, a Matrix room id, ...)."""
M = TypeVar("M")
"""The platform's answer controls on a question (see
:mod:`thalos_bot.channels.delivery.question`)."""


def failure_text(event: TurnFailed) -> str:
    """The partial answer (any open code fence closed), then the failure line."""
    line = notices.turn_failed(event.error)
    partial = event.partial_text
    if not partial.strip():
        return line
    fence = scan(partial)
    if fence is not None:
        partial += f"\n{fence.closing}\n"
    separator = "" if partial.endswith("\n\n") else "\n" if partial.endswith("\n") else "\n\n"
    return partial + separator + line


class ChatOutbox(Generic[A, M]):
    """``chat``: the transport's address of the chat; ``private``: a private chat (in a
    group an answer quotes the message it answers); ``caption_limit``: the transport's,
    for a tool's image."""

    def __init__(
        self,
        chat: A,
        gate: ChatGate,
        *,
        private: bool,
        caption_limit: int,
    ) -> None:
        self.chat = chat
        self.private = private
        self.caption_limit = caption_limit
        self.final_call = False
        """Each answer's complete part is a call of its own (the wire's limits say)."""
        self.gate = gate
        self.views: deque[View | PhotoView | QuestionView[M] | OutcomeView[M]] = deque()
        self.typing_at = 0.0
        """When the typing indicator is next due (while an answer is open)."""
        self.inconsistent_finals = 0
        self._changed = anyio.Event()
        self._empty = anyio.Event()
        self._empty.set()
        self._idle = anyio.Event()

    # -- from the pump -----------------------------------------------------------------

    def apply(self, event: Delivery, thread: str | None = None) -> None:
        """``event`` for the chat, or for the forum topic ``thread`` in it."""
        if isinstance(event, TurnStarted):
            self._append(View("answer", thread=thread, reply_to=self._reply_to(event)))
            self.typing_at = 0.0
        elif isinstance(event, TextUpdate):
            view = self._answer(thread)
            view.text += event.text
            if event.activity:
                view.activity = notices.tool_activity(event.activity[-1])
            elif event.text:
                view.activity = ""
        elif isinstance(event, TurnCompleted):
            self._finish(event.text, thread)
        elif isinstance(event, TurnFailed):
            self._finish(failure_text(event), thread)
        elif isinstance(event, Notice):
            self._append(View.notice(event.text, thread, command=event.command))
        elif isinstance(event, ToolImage | VoiceClip):
            self._append(PhotoView(event, thread, self.caption_limit))
        else:  # usage, info, tool events: nothing to show
            return
        self._wake()

    def final(
        self, text: str, journal: DeliveryJournal, *, ends_turn: bool, thread: str | None = None
    ) -> View:
        """An outbox row's text: the final of the answer streaming now in the topic
        ``thread`` (``ends_turn``), or a message of its own."""
        if ends_turn:
            view = self._answer(thread)
            if not view.close(text):
                self.inconsistent_finals += 1
        else:
            view = View("answer", text, closed=True, thread=thread)
            self._append(view)
        view.journal = journal
        self._wake()
        return view

    def put(self, view: PhotoView | QuestionView[M] | OutcomeView[M]) -> None:
        """An approval question, or the edit that closes one (see
        :mod:`thalos_bot.channels.delivery.question`), or a kept clip."""
        self._append(view)
        self._wake()

    def _append(self, view: View | PhotoView | QuestionView[M] | OutcomeView[M]) -> None:
        if isinstance(view, View):
            view.final_call = self.final_call
        self.views.append(view)
        self._empty = anyio.Event()

    def _reply_to(self, event: TurnStarted) -> str | None:
        """In a group an answer quotes the message it answers (a private chat needs no
        such pointer)."""
        return None if self.private else event.answers

    def _answer(self, thread: str | None) -> View:
        """The topic's open answer, or a new one (a text without TurnStarted is still
        shown). Each forum topic has its own turn, so answers are told apart by topic."""
        view = next(
            (v for v in self.views if isinstance(v, View) and not v.closed and v.thread == thread),
            None,
        )
        if view is None:
            view = View("answer", thread=thread)
            self._append(view)
        return view

    def _finish(self, text: str, thread: str | None) -> None:
        view = self._answer(thread)
        if not view.close(text):
            self.inconsistent_finals += 1

    # -- for the sender ----------------------------------------------------------------

    @property
    def open_answer(self) -> View | None:
        return next((v for v in self.views if isinstance(v, View) and not v.closed), None)

    def current(self) -> View | PhotoView | QuestionView[M] | OutcomeView[M] | None:
        """The view to work on: the first one, unless it is an answer still streaming;
        then a notice or question queued behind the answers still streaming goes first
        (failing that, the next answer)."""
        if any(view.done for view in self.views):
            self.views = deque(view for view in self.views if not view.done)
        if not self.views:
            self._empty.set()
            return None
        head = self.views[0]
        if head.closed:
            return self._reply_past_files() or head
        urgent = next((view for view in self.views if view.closed), None)
        if urgent is not None:
            return urgent
        return self.views[1] if len(self.views) > 1 else head

    def _reply_past_files(self) -> View | None:
        """A command's reply queued behind nothing but files not begun (none in doubt
        from an earlier process): it goes first."""
        for view in self.views:
            if not (isinstance(view, PhotoView) and not view.sent and view.doubt is None):
                return view if isinstance(view, View) and view.command else None
        return None

    def _wake(self) -> None:
        self._changed.set()
        if self._idle.is_set():
            self._idle = anyio.Event()

    def idle(self) -> None:
        """The sender has no call to make now (it says so before it waits)."""
        self._idle.set()

    async def wait_idle(self) -> None:
        """Until the sender has made every call that what the chat was given so far asks
        for (a call that waits for pacing, or is tried again, keeps it busy)."""
        await self._idle.wait()

    def reset_changed(self) -> None:
        """Forget past deliveries: :meth:`wait_changed` now waits for the next one."""
        self._changed = anyio.Event()

    async def wait_changed(self) -> None:
        await self._changed.wait()

    async def wait_empty(self) -> None:
        await self._empty.wait()
