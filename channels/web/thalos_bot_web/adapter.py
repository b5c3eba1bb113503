"""The web adapter: what the pump delivers becomes events on the conversation's timeline.

A conversation is one principal's (all its tabs show it). An answer is streamed into
the page by the kit's delivery engine (see :mod:`thalos_bot_web.wire`) as it streams on
any transport: its view is the page's turn, each edit a ``partial`` event with the whole
answer so far in safe HTML, and its final one ``final`` event, appended once; a final
kept as an outbox row is journaled as every transport's. Everything else waits until
what came before it is on the page, so the page shows things in the order they
happened. Tool images and voice clips go through the engine too, kept in the daemon's
store (the most recent :data:`IMAGES_KEPT`) and shown by URL. Every event is written to
the store and read back from it (:mod:`thalos_bot_web.relay`): its SQLite file, or on
replicas the shared store. A row (a final, a clip, a notice) is confirmed once its event
is written. Approval questions are the kit's
(:class:`~thalos_bot.channels.approvals.asking.Asking`): an ``approval`` event with three
buttons, named by its token (its message, as the kit sees it), and an ``approval_closed``
event with the kit's closing line, which takes the buttons away on every tab.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import anyio

from thalos_bot.channels import notices
from thalos_bot.channels.approvals.asking import Asking
from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.delivery.view import View
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.page_events import SharedPageEvents
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import Delivery, Notice, TextUpdate, TurnStarted
from thalos_bot.domain.errors import ErrorCode
from thalos_bot.domain.events import ToolImage, TurnCompleted, TurnFailed, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_web.relay import Relay
from thalos_bot_web.render import plain
from thalos_bot_web.wire import PageUnreachableError

IMAGES_KEPT = 64
"""Files (tool images, voice clips) kept per conversation in the store."""
Shown = dict[str, str]
"""An approval question's event: its token (``id``), the tool and its arguments, escaped."""


Answering = TurnStarted | TextUpdate | TurnCompleted | TurnFailed
"""What the engine shows: an answer's events."""


def _now() -> str:
    """When a message was said, for the page's timestamps (UTC; shown in local time)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class WebAdapter:
    def __init__(
        self,
        channel_id: ChannelId,
        *,
        flush_interval: float,
        keep_events: int,
        seats: Seats,
        store: SharedPageEvents,
    ) -> None:
        self.channel_id = channel_id
        self.flush_interval: float | None = flush_interval
        self._failed: dict[str, str] = {}
        """The tone of each cut answer's final still to show, by its turn."""
        self.relay = Relay(store, keep_events)
        """Every event goes through the store (numbered there), and the conversations'
        timelines take them back from it."""
        self.timeline = self.relay.timeline
        """A conversation's timeline, the events its page shows."""
        self._emit = self.relay.publish
        """Show an event; the event set once it is in the store."""
        self.asking = Asking[ConversationId, Shown](self._post, "web", seats)
        """The approval questions asked here (their answers from any replica)."""
        self.engine: WireAdapter[ConversationId, None] | None = None
        """The kit's delivery engine the answers go through (set while the channel's
        task group runs; without it, answers are not shown)."""

    def wake(self, conversation: ConversationId) -> None:
        """Wake the conversation's open streams (a logout elsewhere), if it has any."""
        found = self.relay.timelines.get(conversation)
        if found is not None:
            found.wake()

    def close(self) -> None:
        for timeline in self.relay.timelines.values():
            timeline.close()

    # -- what the person said --------------------------------------------------------

    def said(self, conversation: ConversationId, text: str, files: list[str]) -> None:
        self._emit(conversation, "user", {"html": plain(text), "files": files, "at": _now()})

    def notice(self, conversation: ConversationId, text: str, tone: str = "info") -> anyio.Event:
        data = {"html": plain(text), "tone": tone, "at": _now()}
        return self._emit(conversation, "notice", data)

    # -- the pump's deliveries -------------------------------------------------------

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        engine = self.engine
        outbox = engine.outbox(conversation_id) if engine is not None else None
        if outbox is not None:
            await outbox.wait_idle()  # the page shows what it was given before
        if isinstance(event, Notice):
            self.notice(conversation_id, event.text, event.tone)
        elif outbox is not None and isinstance(event, ToolImage | VoiceClip):
            outbox.apply(event, None)
            await outbox.wait_idle()
        elif outbox is not None and isinstance(event, Answering):
            self._answer(conversation_id, outbox, event)
            await outbox.wait_idle()

    def _answer(
        self,
        conversation: ConversationId,
        outbox: ChatOutbox[ConversationId, None],
        event: Answering,
    ) -> None:
        """An answer's event, for the engine to show: the page's turn is the answer's
        view (named by its key); its tool activity lines and a cut answer's tone are
        the page's own."""
        assert self.engine is not None
        answer = outbox.open_answer
        if answer is None or isinstance(event, TurnStarted):
            self.engine.post(
                conversation, event if isinstance(event, TurnStarted) else TurnStarted()
            )
            opened = outbox.views[-1]
            assert isinstance(opened, View)
            answer = opened
            if isinstance(event, TurnStarted | TextUpdate):  # a text is shown in a turn
                self._emit(conversation, "turn", {"turn": answer.key})
        if isinstance(event, TextUpdate):
            for activity in event.activity:
                text = notices.tool_activity(activity)
                self._emit(conversation, "activity", {"turn": answer.key, "text": text})
        elif isinstance(event, TurnFailed):
            # The answer so far ends with what cut it, in its own bubble (as on every
            # transport): a cut answer never looks complete, after a reload too.
            cancelled = event.error.code is ErrorCode.CANCELLED
            self._failed[answer.key] = "info" if cancelled else "error"
        elif isinstance(event, TurnCompleted) and not event.text.strip():
            self._emit_final(conversation, answer.key, "")  # nothing to show but the end
        if not isinstance(event, TurnStarted):
            self.engine.post(conversation, event)

    # -- finals kept as outbox rows, through the engine -----------------------------

    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        engine = self.engine
        if engine is None:
            return  # a page without its engine (stopped): the row waits for the next start
        answer = engine.outbox(conversation_id).open_answer if ends_turn else None
        await engine.deliver_final(conversation_id, text, journal, ends_turn=ends_turn)
        if not text.strip():  # nothing to show but the turn's end
            self._emit_final(conversation_id, answer.key if answer else secrets.token_hex(8), "")

    async def deliver_notice(
        self, conversation_id: ConversationId, notice: Notice, journal: DeliveryJournal
    ) -> None:
        """A notice kept as an outbox row (a detached failure): a notice with its tone,
        in plain text, after the answers still queued; confirmed once it is kept."""
        if self.engine is None:
            return  # stopped: the row waits for the next start
        await self.engine.outbox(conversation_id).wait_idle()
        await self.notice(conversation_id, notice.text, notice.tone).wait()
        await journal.confirm()

    async def show(self, conversation: ConversationId, turn: str, html: str, final: bool) -> None:
        """The engine's send or edit of ``turn``'s answer: a ``partial`` event, or the
        ``final`` one unless the page has it already (a send made again)."""
        if not final:
            self._emit(conversation, "partial", {"turn": turn, "html": html}, turn)
            return
        if not await self._on_page(conversation, turn):
            await self._emit_final(conversation, turn, html).wait()  # before the confirm

    async def _on_page(self, conversation: ConversationId, key: str) -> bool:
        """Whether the page has the final or the file sent with ``key`` (a send made
        again, by a restarted daemon too: the key is kept in the store), with what the
        store has read first."""
        try:
            await self.relay.catch_up(conversation)
        except Exception as exc:
            raise PageUnreachableError from exc
        return any(e.data.get("key") == key for e in self.timeline(conversation).events())

    def _emit_final(self, conversation: ConversationId, turn: str, html: str) -> anyio.Event:
        """The turn's final (its key: a send made again finds it)."""
        data = {"turn": turn, "html": html, "at": _now(), "key": turn}
        if (failed := self._failed.pop(turn, None)) is not None:
            data["failed"] = failed  # the bubble's tone: info (cancelled) or error
        return self._emit(conversation, "final", data, turn)

    async def deliver_clip(
        self, conversation_id: ConversationId, clip: VoiceClip, journal: DeliveryJournal
    ) -> None:
        """A spoken answer's clip kept as an outbox row: through the engine (stopped:
        the row waits for the next start)."""
        if self.engine is not None:
            await self.engine.deliver_clip(conversation_id, clip, journal)

    async def keep(
        self, conversation: ConversationId, key: str, file: ToolImage | VoiceClip, caption: str
    ) -> None:
        """The engine's upload of a tool's image or a clip: kept in the store to serve
        at ``/media/<key>`` (the most recent :data:`IMAGES_KEPT`), shown with its caption
        unless the page has it already (an upload made again, after a restart too)."""
        if await self._on_page(conversation, key):
            return  # an upload made again
        try:  # in the store before the event naming it (a failure: uploaded again)
            await self.relay.store.keep_media(
                conversation, key, file.media_type, file.data, IMAGES_KEPT
            )
        except Exception as exc:
            raise PageUnreachableError from exc
        kind = "audio" if isinstance(file, VoiceClip) else "image"
        data = {"url": f"/media/{key}", "caption": plain(caption), "key": key}
        await self._emit(conversation, kind, data).wait()

    # -- approvals ---------------------------------------------------------------------

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        token = Asking.token()
        shown = {"id": token, "tool": plain(request.tool), "preview": plain(request.preview)}
        view = QuestionView(f"Allow {request.tool}?", shown)
        return await self.asking.ask(conversation_id, request, token, view)

    def _post(
        self, conversation: ConversationId, view: QuestionView[Shown] | OutcomeView[Shown]
    ) -> None:
        """The kit's flow's posts: a question is shown once emitted."""
        if isinstance(view, QuestionView):
            self._emit(conversation, "approval", view.markup)
            view.shown(view.markup["id"])
        else:
            closed = {"id": view.question.markup["id"], "text": view.outcome}
            self._emit(conversation, "approval_closed", closed)

    def asked(self, conversation: ConversationId, key: str) -> bool:
        """Whether ``conversation``'s page shows question ``key`` open (asked on any
        replica, neither answered nor withdrawn)."""
        events = self.timeline(conversation).events()
        shown = any(e.kind == "approval" and e.data.get("id") == key for e in events)
        closed = any(e.kind == "approval_closed" and e.data.get("id") == key for e in events)
        return shown and not closed
