"""One room's outbox and its sender: what the room should show, and the calls that show it.

The pump's deliveries land in :class:`RoomOutbox` without waiting for the homeserver;
the room's :class:`RoomSender` task works through it one call at a time, paced by the
room's gate and the account's block (:mod:`.pacing`). A notice or an approval question
that arrives while an answer streams goes out at once; whatever follows a finished
answer waits until its final text is out, so the room reads in the order things
happened.

Failures: a call that may not have arrived (a timeout, a 5xx) is made again with the
same transaction id after a backoff; a 429 is waited out as its ``retry_after_ms``
says (for the whole account) and the call made again, so the final edit always lands;
any other refusal (the bot was kicked, the event is too big) gives that item up, logged,
and a final's outbox row is refused.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from time import monotonic

import anyio
import structlog

from thalos_bot.channels import notices
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.ports import Delivery, Notice, TextUpdate, TurnStarted
from thalos_bot.domain.events import ToolImage, TurnCompleted, TurnFailed
from thalos_bot_matrix.attachments import encrypt as encrypt_attachment
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.pacing import RoomGate
from thalos_bot_matrix.render import edit, message
from thalos_bot_matrix.views import AnswerView, Call, ImageView, OutcomeView, QuestionView, Queued

log = structlog.get_logger(__name__)

Seal = Callable[[str, str, JSON], Awaitable[tuple[str, JSON]]]
OPAQUE = "application/octet-stream"
"""What an encrypted file is uploaded as (its real type is inside the event)."""


def failure_text(event: TurnFailed) -> str:
    line = notices.turn_failed(event.error)
    partial = event.partial_text
    if not partial.strip():
        return line
    if partial.count("```") % 2 == 1:
        partial += "\n```\n"
    return partial.rstrip("\n") + "\n\n" + line


class RoomOutbox:
    def __init__(self, room_id: str, gate: RoomGate, *, live: bool = True) -> None:
        self.room_id = room_id
        self.gate = gate
        self.live = live
        """Answers show while they stream (else only their final text)."""
        self.views: deque[Queued] = deque()
        self.inconsistent_finals = 0
        self._changed = anyio.Event()
        self._empty = anyio.Event()
        self._empty.set()

    def apply(self, event: Delivery) -> None:
        if isinstance(event, TurnStarted):
            self._append(AnswerView(reply_to=event.answers, live=self.live))
        elif isinstance(event, TextUpdate):
            view = self._answer()
            view.text += event.text
            if event.activity:
                view.activity = notices.tool_activity(event.activity[-1])
            elif event.text:
                view.activity = ""
        elif isinstance(event, TurnCompleted):
            self._answer().close(event.text)
        elif isinstance(event, TurnFailed):
            self._answer().close(failure_text(event))
        elif isinstance(event, Notice):
            self._append(AnswerView.notice_of(event.text))
        elif isinstance(event, ToolImage):
            self._append(ImageView(event))
        else:
            return
        self._changed.set()

    def final(self, text: str, journal: DeliveryJournal, *, ends_turn: bool) -> AnswerView:
        if ends_turn:
            view = self._answer()
            if view.closed and view.text != text:
                self.inconsistent_finals += 1
            view.close(text)
        else:
            view = AnswerView(text, closed=True)
            self._append(view)
        view.journal = journal
        self._changed.set()
        return view

    def put(self, view: QuestionView | OutcomeView) -> None:
        self._append(view)
        self._changed.set()

    def _append(self, view: Queued) -> None:
        self.views.append(view)
        self._empty = anyio.Event()

    def _answer(self) -> AnswerView:
        view = next((v for v in self.views if isinstance(v, AnswerView) and not v.closed), None)
        if view is None:
            view = AnswerView(live=self.live)
            self._append(view)
        return view

    def current(self) -> Queued | None:
        """The head, unless it is an answer still streaming: then a closed item queued
        behind it goes first (a notice, a question), failing that the next answer. (The
        pump hands a tool's images over after the turn's final event.)"""
        self.views = deque(v for v in self.views if not v.done)
        if not self.views:
            self._empty.set()
            return None
        head = self.views[0]
        if head.closed:
            return head
        urgent = next((v for v in self.views if v.closed), None)
        return urgent if urgent is not None else head

    def reset_changed(self) -> None:
        self._changed = anyio.Event()

    async def wait_changed(self) -> None:
        await self._changed.wait()

    async def wait_empty(self) -> None:
        await self._empty.wait()

    @property
    def pending(self) -> bool:
        return any(not v.done for v in self.views)


class RoomSender:
    def __init__(
        self,
        client: MatrixClient,
        outbox: RoomOutbox,
        backoff: Backoff,
        *,
        on_sent: Callable[[str], None] = lambda _event: None,
        seal: Seal | None = None,
        sealed: Callable[[str], bool] = lambda _room: False,
    ) -> None:
        self.client = client
        self.seal = seal
        """Encrypts an event's type and content for an encrypted room (else as is)."""
        self.sealed = sealed
        """Whether a room is encrypted: a file for it is uploaded encrypted."""
        self.outbox = outbox
        self.backoff = backoff
        self.on_sent = on_sent
        """Hears the id of every event the bot put in the room (replies to it count as
        addressing the bot)."""

    async def run(self) -> None:
        outbox = self.outbox
        while True:
            outbox.reset_changed()
            view = outbox.current()
            if view is None:
                await outbox.wait_changed()
                continue
            if isinstance(view, AnswerView) and view.next_call() is None:
                if view.closed:  # done, or nothing to show: settle it
                    await self._settle(view)
                    continue
                await outbox.wait_changed()  # streaming, all shown: wait for more text
                continue
            if isinstance(view, OutcomeView) and view.question.event_id is None:
                view.done = True  # the question never went out: nothing to close
                continue
            ready = outbox.gate.ready_at()
            now = monotonic()
            if ready > now:
                with anyio.move_on_after(ready - now):
                    await outbox.wait_changed()
                continue
            await self._perform(view)

    async def _perform(self, view: Queued) -> None:
        room = self.outbox.room_id
        try:
            if isinstance(view, AnswerView):
                await self._answer_call(view)
            elif isinstance(view, ImageView):
                await self._image(view)
            elif isinstance(view, QuestionView):
                content = message(view.text)
                view.event_id = await self._send(content, view.txn)
                view.settled.set()
            else:
                target = view.question.event_id
                assert target is not None
                await self._send(edit(target, view.text), view.txn)
                view.done = True
        except UnreachableError as exc:
            wait = self.backoff.next_delay()
            self.outbox.gate.retry_at = monotonic() + wait
            log.warning("matrix_send_failed", room=room, reason=exc.reason, retry_in_s=wait)
        except MatrixError as exc:
            if exc.rate_limited:
                wait = exc.retry_after if exc.retry_after is not None else self.backoff.next_delay()
                self.outbox.gate.account.block(wait)
                log.info("matrix_rate_limited", room=room, retry_after_s=round(wait, 3))
                return
            log.error(  # noqa: TRY400 - a refusal, not a bug: no traceback
                "matrix_send_refused", room=room, status=exc.status, errcode=exc.errcode
            )
            await self._give_up(view)
        else:
            self.backoff.reset()

    async def _answer_call(self, view: AnswerView) -> None:
        call = view.next_call()
        assert call is not None
        if view.journal is not None:
            await view.journal.save(view.progress())  # before a call whose outcome may be lost
        content = self._content(view, call)
        event_id = await self._send(content, call.txn)
        view.made(call, event_id)
        if view.journal is not None:
            await view.journal.save(view.progress())
        if view.done:
            await self._settle(view)

    def _content(self, view: AnswerView, call: Call) -> JSON:
        if call.target is not None:
            return edit(call.target, call.text, notice=view.notice)
        content = message(call.text, notice=view.notice)
        if call.index == 0 and view.reply_to is not None:
            content["m.relates_to"] = {"m.in_reply_to": {"event_id": view.reply_to}}
        return content

    async def _send(self, content: JSON, txn: str) -> str:
        self.outbox.gate.sent()
        kind = "m.room.message"
        if self.seal is not None:
            kind, content = await self.seal(self.outbox.room_id, kind, content)
        event_id = await self.client.send(self.outbox.room_id, kind, txn, content)
        log.debug("matrix_sent", room=self.outbox.room_id, event_id=event_id, txn=txn)
        self.on_sent(event_id)
        return event_id

    async def _image(self, view: ImageView) -> None:
        image = view.image
        if view.uri is None:
            name = f"{image.tool.replace('__', '-')}.{image.media_type.rsplit('/', 1)[-1]}"
            if self.sealed(self.outbox.room_id):
                # The server keeps only ciphertext; the key travels in the (encrypted)
                # event. Kept on the view, so a resend names the same upload and key.
                ciphertext, view.file = encrypt_attachment(image.data)
                view.uri = await self.client.upload(ciphertext, OPAQUE, name)
            else:
                view.uri = await self.client.upload(image.data, image.media_type, name)
        content: JSON = {
            "msgtype": "m.image",
            "body": notices.tool_image(image.tool, image.media_type, len(image.data)),
            "info": {"mimetype": image.media_type, "size": len(image.data)},
        }
        if view.file is not None:
            content["file"] = {**view.file, "url": view.uri}
        else:
            content["url"] = view.uri
        await self._send(content, view.txn)
        view.done = True

    async def _settle(self, view: AnswerView) -> None:
        journal, view.journal = view.journal, None
        view.parts = view.parts or []
        if journal is not None:
            await journal.confirm()
        self.outbox.views = type(self.outbox.views)(v for v in self.outbox.views if v is not view)

    async def _give_up(self, view: Queued) -> None:
        if isinstance(view, AnswerView):
            journal, view.journal = view.journal, None
            view.closed = True
            view.pending = None
            view.text = ""
            if journal is not None:
                await journal.refuse()
        elif isinstance(view, QuestionView):
            view.given_up = True
            view.settled.set()
        else:
            view.done = True
        self.outbox.views = type(self.outbox.views)(v for v in self.outbox.views if v is not view)
