"""The delivery engine's sender: one chat's rounds, made over a plug-in's wire.

:class:`WireSender` is the :class:`~thalos_bot.channels.delivery.rounds.ChatRounds` of
every transport that hands the kit a :class:`~thalos_bot.channels.delivery.wire.Wire`:
each round picks the next call for the chat's latest desired state and makes it through
the wire, paced and waiting out retry-after. What a failure means is the wire's
classification, and what is done about it is the same for every platform:

- one that cannot have arrived (``NOT_SENT``), or a flood wait, is made again later;
- an edit in doubt is made again (an edit cannot duplicate anything);
- a send in doubt (``MAYBE_SENT``) is made again *as the same request* (its key) where
  the platform dedupes on it, and otherwise looked for with the wire's
  :meth:`~thalos_bot.channels.delivery.wire.Finding.find` first, nothing else going to
  the chat meanwhile;
- the platform refusing the markup (``BAD_ENTITIES``) sends the part plain;
- an edit of a message that is gone continues the part in a new message;
- where the wire offers :class:`~thalos_bot.channels.delivery.wire.Appending`, a live
  preview is opened, appended to and closed with those verbs (a start in doubt is looked
  for like a send); a refused start turns the chat's previews into edited messages, and
  a preview whose append failed is closed and then edited to its part;
- any other refusal skips that part (a final's outbox row is then refused), never the
  rest of the chat's deliveries.

A final's outbox row is journaled as the part goes: before a part is sent, how many are
shown and the part's key; so a restarted daemon resumes the answer where it was, and a
send that was in doubt is made again as the same request (or found). When the turn ends
while a streamed preview may be on its way, the row first holds the live message, or
that preview's key (``preview``: what it shows is unknown, so the message a repeat or a
find answers is edited to the part, never sent anew).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from time import monotonic
from typing import Generic, TypeVar

import structlog

from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.journal import Journaling
from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.photo import PhotoView
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.delivery.rounds import ChatRounds, Rendering
from thalos_bot.channels.delivery.view import Draft, Edit, Send, Step, View
from thalos_bot.channels.delivery.wire import Appending, DraftWire, Outgoing, Wire, finding
from thalos_bot.channels.pacing.gate import GlobalPacer
from thalos_bot.channels.text.split import Part

log = structlog.get_logger(__name__)

A = TypeVar("A")
M = TypeVar("M")

Pending = View | PhotoView | QuestionView[M]
"""What a send in doubt was for."""


@dataclass(slots=True)
class Doubt(Generic[M]):
    """A send whose outcome is unknown, looked for by its key before anything else."""

    view: View | PhotoView | QuestionView[M]
    key: str
    step: Send | None = None
    preview: bool = False
    """It was a streamed preview's send: what it showed is unknown."""
    started: bool = False
    """It opened a preview that is appended to."""


class WireSender(ChatRounds[A, M]):
    def __init__(
        self,
        wire: Wire[A, M],
        outbox: ChatOutbox[A, M],
        rendering: Rendering,
        pacer: GlobalPacer,
        *,
        told: Callable[[A | None, float], None] = lambda chat, seconds: None,
    ) -> None:
        super().__init__(outbox, rendering, pacer, channel=wire.name)
        self.wire = wire
        self._told = told
        """Told each flood wait the chat meets, with None for the chat when it holds
        every chat (replicas: shared through the store)."""
        self.in_doubt: object | None = None
        """A send being checked (:class:`Doubt`, or the transport's own check)."""
        self._journaling = Journaling(wire.name)
        self._uncertain = f"{wire.name}_send_uncertain"
        self._found = f"{wire.name}_send_checked"
        self._no_drafts = f"{wire.name}_drafts_unavailable"
        self._tried: dict[str, str | None] = {}
        """The text first tried with a live message's key, while that send is in doubt
        (a repeat with the key answers the message that try made); None: unknown (a
        preview an earlier process sent)."""
        self._appending = wire if isinstance(wire, Appending) else None
        self._finding = finding(wire)
        self._edited_only = False
        """A preview's start was refused here: previews are edited messages."""

    def _classify(self, exc: Exception) -> Classified | None:
        return self.wire.classify(exc)

    def _note_failure(self, method: str, failure: Classified) -> None:
        super()._note_failure(method, failure)
        if failure.failure is Failure.RETRY_AFTER:
            chat = None if failure.everywhere else self.chat
            self._told(chat, failure.retry_after or 1.0)

    # -- the message: rendered, or plain when the dialect is refused or does not fit ----

    def _outgoing(
        self, view: View, step: Step, *, thread: str | None, reply_to: str | None = None
    ) -> Outgoing[M]:
        part = step.part
        plain = view.plain
        text = part.text
        if not plain:
            rendered = self.wire.render(part.text)
            if rendered.strip():
                text = rendered
            else:
                plain = True  # nothing to show in the dialect, or it would not fit
        return Outgoing(
            text,
            view.key,
            plain=plain,
            notice=view.kind == "notice",
            thread=thread,
            reply_to=reply_to,
            complete=not isinstance(step, Draft) and step.commit,
        )

    # -- calls -------------------------------------------------------------------------

    async def _typing(self) -> None:
        self.outbox.typing_at = monotonic() + self.rendering.typing_interval
        answer = self.outbox.open_answer
        thread = answer.thread if answer is not None else None
        await self._call("action", "typing", lambda: self.wire.typing(self.chat, thread))

    async def _perform(self, view: View, step: Step) -> None:
        if isinstance(step, Send):
            await self._send(view, step)
        elif isinstance(step, Edit):
            await self._edit(view, step)
        elif isinstance(self.wire, DraftWire):
            await self._draft(view, step)

    async def _draft(self, view: View, step: Draft) -> None:
        assert isinstance(self.wire, DraftWire)
        draft_wire: DraftWire[A, M] = self.wire
        now = monotonic()
        message = self._outgoing(view, step, thread=view.thread)
        message = replace(message, activity=step.activity)
        result = await self._call(
            "draft", "draft", lambda: draft_wire.draft(self.chat, step.draft_id, message)
        )
        if not isinstance(result, Classified) or result.failure is Failure.NOT_MODIFIED:
            view.draft_key = step.key
            view.draft_at = now
            return
        kind = result.failure
        if kind is Failure.BAD_ENTITIES and not view.plain:
            view.plain = True
        # Only a server that lacks drafts turns them off (for every chat); one chat's
        # refusal (the user blocked the bot, the chat is gone) says nothing about others.
        elif kind is Failure.UNSUPPORTED and self.rendering.mode == "draft":
            log.warning(
                self._no_drafts, chat=self.chat, note="streaming falls back to editing a message"
            )
            self.rendering.mode = "edit"
        # else: drafts are idempotent: the next round sends the latest one

    async def _send(self, view: View, step: Send) -> None:
        if not step.commit and self._appends(view):
            await self._start(view, step)
            return
        message = self._outgoing(view, step, thread=view.thread, reply_to=view.reply_to)
        ticket = self._begin()
        if step.commit:
            noted = self._noted(message, ticket)
            if message.key in self._tried and self._tried[message.key] != step.part.text:
                noted["preview"] = True  # what an earlier try with the key shows is not this
            await self._journaling.note(view, self.chat, **noted)
        result = await self._call("message", "send", lambda: self.wire.send(self.chat, message))
        if isinstance(result, str):
            self._sent(ticket, result)
            if message.key in self._tried and self._tried.pop(message.key) != step.part.text:
                # The repeat answered the message the first try made, with that try's
                # text: it is the live message now, and the next round edits it.
                view.reply_to = None
                view.live_id = result
                view.live_text = None
                return
            self._delivered(view, step, result)
            return
        kind = result.failure
        if kind is Failure.MAYBE_SENT:
            self._tried.setdefault(message.key, step.part.text)
            self._doubt(view, message, ticket, step)
            return
        self._not_sent(ticket)
        if kind is Failure.BAD_ENTITIES and not view.plain:
            view.plain = True  # the next round sends this part as plain text
        elif kind not in {Failure.RETRY_AFTER, Failure.NOT_SENT}:
            self._give_up(view, step.commit, step.part)

    def _delivered(self, view: View, step: Send, ref: str) -> None:
        self._seen(ref)
        view.reply_to = None  # only the answer's first message quotes
        if step.commit:
            view.commit(step.part)
        else:
            view.shown_live(ref, step.part)

    async def _edit(self, view: View, step: Edit) -> None:
        if view.live_open:
            await self._grow(view, step)
            return
        message = self._outgoing(view, step, thread=view.thread)
        if step.commit:
            await self._journaling.note(view, self.chat, live_id=step.message_id)
        result = await self._call(
            "message", "edit", lambda: self.wire.edit(self.chat, step.message_id, message)
        )
        if not isinstance(result, Classified) or result.failure is Failure.NOT_MODIFIED:
            view.live_text = step.part.text
            if step.commit:
                view.commit(step.part)
            return
        kind = result.failure
        if kind in {Failure.RETRY_AFTER, Failure.NOT_SENT}:
            return
        if kind is Failure.MAYBE_SENT:
            view.live_text = None  # unknown: the next round edits again
        elif kind is Failure.BAD_ENTITIES and not view.plain:
            view.plain = True
        elif kind in {Failure.GONE, Failure.NOT_EDITABLE}:
            view.live_id = None  # deleted: the part continues in a new message
            view.live_text = None
        else:
            self._give_up(view, step.commit, step.part)

    # -- a live preview that is appended to ----------------------------------------------

    def _appends(self, view: View) -> bool:
        appending = self._appending
        return (
            appending is not None
            and not self._edited_only
            and appending.appends(self.chat, view.thread)
        )

    async def _start(self, view: View, step: Send) -> None:
        appending = self._appending
        assert appending is not None
        message: Outgoing[M] = Outgoing(
            step.part.text, view.key, thread=view.thread, reply_to=view.reply_to
        )
        ticket = self._begin()
        result = await self._call("message", "start", lambda: appending.start(self.chat, message))
        if isinstance(result, str):
            self._sent(ticket, result)
            self._delivered(view, step, result)
            view.live_open = True
            return
        kind = result.failure
        if kind is Failure.MAYBE_SENT:
            self._doubt(view, message, ticket, step)
            if isinstance(self.in_doubt, Doubt) and self.in_doubt.view is view:
                self.in_doubt.started = True  # found, it is a preview still appended to
            return
        self._not_sent(ticket)
        if kind not in {Failure.RETRY_AFTER, Failure.NOT_SENT}:
            self._edited_only = True  # the next round sends a message to edit

    async def _grow(self, view: View, step: Edit) -> None:
        """Append what the part adds to the open preview, or close it once the part is
        complete. A part that no longer extends what the preview shows (or an unknown
        one) closes it first; the next round edits the message to the part."""
        appending = self._appending
        assert appending is not None
        ref, shown, text = step.message_id, view.live_text, step.part.text
        rest = text[len(shown) :] if shown is not None and text.startswith(shown) else None
        if step.commit:
            await self._journaling.note(view, self.chat, live_id=ref)
        grows = rest is not None and not step.commit
        if grows:
            method, call = "append", lambda: appending.append(self.chat, ref, rest or "")
        else:
            method, call = "finish", lambda: appending.finish(self.chat, ref, rest or "", view.key)
        result = await self._call("message", method, call)
        if isinstance(result, Classified):
            kind = result.failure
            if kind in {Failure.RETRY_AFTER, Failure.NOT_SENT}:
                return
            view.live_text = None  # unknown: the next round closes it (again), adding nothing
            if method == "finish" and kind is not Failure.MAYBE_SENT:
                view.live_open = False  # closed, or not the bot's: edited like any message
            return
        if grows:
            view.live_text = text
            return
        view.live_open = False
        if rest is not None:
            view.commit(step.part)  # otherwise the next round edits it to the part

    async def _photo(self, view: PhotoView) -> None:
        caption: Outgoing[M] = Outgoing(view.caption, view.key, plain=True, thread=view.thread)
        ticket = self._begin()
        if view.journal is not None:
            await self._journaling.note_upload(view, self.chat, **self._noted(caption, ticket))
        result = await self._call(
            "message", "upload", lambda: self.wire.upload(self.chat, view.image, caption)
        )
        if isinstance(result, str):
            self._sent(ticket, result)
            self._seen(result)
            view.sent = True
            return
        kind = result.failure
        if kind is Failure.MAYBE_SENT:
            self._doubt(view, caption, ticket)
            return
        self._not_sent(ticket)
        if kind not in {Failure.RETRY_AFTER, Failure.NOT_SENT}:
            view.sent = True  # refused for good (logged): the answer it belongs to is out
            view.refused = True

    async def _ask(self, view: QuestionView[M]) -> None:
        message = Outgoing(view.html, view.key, thread=view.thread, controls=view.markup)
        ticket = self._begin()
        result = await self._call("message", "send", lambda: self.wire.send(self.chat, message))
        if isinstance(result, str):
            self._sent(ticket, result)
            self._seen(result)
            view.shown(result)
            return
        kind = result.failure
        if kind is Failure.MAYBE_SENT:
            self._doubt(view, message, ticket)
            view.checking = self.in_doubt is not None
            return
        self._not_sent(ticket)
        if kind not in {Failure.RETRY_AFTER, Failure.NOT_SENT}:
            view.give_up()  # refused for good (logged): the question is not asked

    async def _close_question(self, view: OutcomeView[M]) -> None:
        step = view.next_step(self.mode)
        if step is None:
            return
        message: Outgoing[M] = Outgoing(step.html, view.question.key, thread=view.question.thread)
        result = await self._call(
            "message", "edit", lambda: self.wire.edit(self.chat, step.message_id, message)
        )
        if isinstance(result, Classified) and result.failure in {
            Failure.RETRY_AFTER,
            Failure.NOT_SENT,
            Failure.MAYBE_SENT,
        }:
            return  # an edit cannot duplicate anything: it is made again
        view.edited = True  # done, or refused for good (logged)

    def _give_up(self, view: View, complete: bool, part: Part) -> None:
        """The platform refused this part for good: skip it (a complete part), or stop
        streaming this answer (its final text is still attempted)."""
        if complete:
            view.refused = True
            view.commit(part)
        else:
            view.streaming = False

    # -- a send in doubt -----------------------------------------------------------------

    # -- hooks for a transport whose check of a send in doubt needs more -------------------

    def _begin(self) -> object:
        """Before a new message's call: what the check of a send in doubt needs to know
        of it (Telegram: the message-id counter's state), handed back to the hooks below."""
        return None

    def _noted(self, message: Outgoing[M], ticket: object) -> dict[str, object]:
        """What a final part's journal keeps before its call, for a restarted daemon."""
        return {"key": message.key}

    def _sent(self, ticket: object, ref: str) -> None:
        """The new message arrived as ``ref``."""

    def _not_sent(self, ticket: object) -> None:
        """The new message did not arrive (its call failed before it could)."""

    def _seen(self, ref: str) -> None:
        """A message of the bot's is in the chat now."""

    def _doubt(
        self, view: Pending[M], message: Outgoing[M], ticket: object, step: Send | None = None
    ) -> None:
        """A new message's call may have arrived. ``repeat``: the next round makes the same
        request (same key) after the backoff the failure set. ``find``: it is looked for
        before anything else is sent."""
        if self._finding is not None:
            self.in_doubt = Doubt(view, message.key, step)
            log.info(self._uncertain, chat=self.chat)

    def _recheck(self, view: View | PhotoView) -> bool:
        noted = view.doubt or {}
        view.doubt = None
        key = noted.get("key")
        if not isinstance(key, str):
            return False
        if isinstance(view, PhotoView):
            if self._finding is None:
                return False  # uploaded again with the same key: the platform keeps one
            self.in_doubt = Doubt(view, key)
            log.info(self._uncertain, chat=self.chat)
            return True
        preview = noted.get("preview") is True
        if self._finding is None:
            if preview:
                self._tried[key] = None  # the message it answers is edited to the part
            return False  # the same key is sent again: the platform keeps one message
        step = view.next_step(self.rendering.mode, monotonic(), self.rendering.limit)
        if not isinstance(step, Send):
            return False
        self.in_doubt = Doubt(view, key, step, preview)
        return True

    async def _probe(self) -> None:
        doubt, finder = self.in_doubt, self._finding
        assert isinstance(doubt, Doubt)
        assert finder is not None
        result = await self._call("message", "find", lambda: finder.find(self.chat, doubt.key))
        if isinstance(result, Classified):
            return  # looked for again after the wait the failure set
        self.in_doubt = None
        view = doubt.view
        if isinstance(view, QuestionView):
            view.checking = False
        log.info(self._found, chat=self.chat, arrived=result is not None)
        if result is None:
            return  # it did not arrive: the next round sends it again
        if isinstance(view, PhotoView):
            view.sent = True
        elif isinstance(view, QuestionView):
            view.shown(result)
        elif doubt.preview:
            view.live_id = result  # it shows what the preview did: edited next round
            view.live_text = None
        elif doubt.step is not None:
            self._delivered(view, doubt.step, result)
            view.live_open = doubt.started
