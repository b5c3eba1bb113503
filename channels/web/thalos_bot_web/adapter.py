"""The web adapter: what the pump delivers becomes events on the conversation's timeline.

A conversation is one principal's (all its tabs show it). Streamed text is rendered to
safe HTML at each flush, the whole answer so far, so a ``partial`` event stands on its
own; the final answer is one ``final`` event. Tool images are kept in memory (the most
recent ones, :data:`IMAGES_KEPT`) and shown by URL. Approval questions are the kit's
(:class:`~thalos_bot.channels.approvals.asking.Asking`): an ``approval`` event with three
buttons, named by its token (its message, as the kit sees it), and an ``approval_closed``
event with the kit's closing line, which takes the buttons away on every tab.

A final kept as an outbox row goes through the kit's delivery engine (see
:mod:`thalos_bot_web.wire`), journaled as every transport's. Whatever follows it on the
page waits until it is there, so the page shows things in the order they happened.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio

from thalos_bot.channels import notices
from thalos_bot.channels.approvals.asking import Asking
from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.outbox import failure_text
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.delivery.view import View
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.listeners.served import ServedApi
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import Delivery, Notice, TextUpdate, TurnStarted
from thalos_bot.domain.errors import ErrorCode
from thalos_bot.domain.events import ToolImage, TurnCompleted, TurnFailed, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_web.history import History
from thalos_bot_web.relay import Relay
from thalos_bot_web.render import markdown, plain
from thalos_bot_web.timeline import SHARED_EPOCH, Timeline
from thalos_bot_web.wire import PageUnreachableError

IMAGES_KEPT = 64
Shown = dict[str, str]
"""An approval question's event: its token (``id``), the tool and its arguments, escaped."""


def _now() -> str:
    """When a message was said, for the page's timestamps (UTC; shown in local time)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(slots=True)
class _Turn:
    id: str
    text: str = ""


@dataclass(frozen=True, slots=True)
class _Closing:
    """A final's row as the engine sees it, with the turn the final closes on the page:
    the send finds it on its queued view (nothing kept beside it that could outlive the
    row), and the row's progress notes it, so the replica taking the row over closes
    that same turn."""

    journal: DeliveryJournal
    turn: str

    @property
    def progress(self) -> Mapping[str, object]:
        return self.journal.progress

    async def save(self, progress: Mapping[str, object]) -> None:
        await self.journal.save({**progress, "turn": self.turn})

    async def confirm(self) -> None:
        await self.journal.confirm()

    async def refuse(self) -> None:
        await self.journal.refuse()


class WebAdapter:
    def __init__(
        self,
        channel_id: ChannelId,
        *,
        flush_interval: float,
        keep_events: int,
        seats: Seats,
        history: History | None = None,
    ) -> None:
        self.channel_id = channel_id
        self.flush_interval: float | None = flush_interval
        self._keep = keep_events
        self._history = history
        self.timelines: dict[ConversationId, Timeline] = {}
        """The conversations in memory, each with its page's events."""
        self._turns: dict[ConversationId, _Turn] = {}
        self._images: OrderedDict[str, tuple[ConversationId, str, bytes]] = OrderedDict()
        self.asking = Asking[ConversationId, Shown](self._post, "web", seats)
        """The approval questions asked here (their answers from any replica)."""
        self.api: ServedApi | None = None
        """The OpenAI-compatible API's waiting requests (its conversations' deliveries)."""
        self.relay: Relay | None = None
        """Replicas: every event goes through the shared store (numbered there), and
        the timelines take them back from it; None: appended here."""
        self.engine: WireAdapter[ConversationId, None] | None = None
        """The kit's delivery engine the finals kept as outbox rows go through (set
        once the channel's task group runs)."""

    def timeline(self, conversation: ConversationId) -> Timeline:
        found = self.timelines.get(conversation)
        if found is None and self.relay is not None:
            # The shared store keeps the conversation's events (the relay reads them in).
            found = self.timelines[conversation] = Timeline(self._keep, SHARED_EPOCH)
        elif found is None:
            found = self.timelines[conversation] = Timeline(self._keep)
            history = self._history
            if history is not None:
                for kept in history.load(conversation):
                    found.append(kept.kind, kept.data, turn=kept.turn)
                history.follow(conversation, found)
        return found

    def _emit(
        self,
        conversation: ConversationId,
        kind: str,
        data: dict[str, Any],
        turn: str | None = None,
    ) -> anyio.Event | None:
        """Show an event; on replicas, the event set once it is in the store."""
        if self.relay is not None:
            self.timeline(conversation)  # the relay reads the events of those it has
            return self.relay.publish(conversation, kind, data, turn)
        self.timeline(conversation).append(kind, data, turn=turn)
        return None

    def wake(self, conversation: ConversationId) -> None:
        """Wake the conversation's open streams (a logout elsewhere), if it has any."""
        found = self.timelines.get(conversation)
        if found is not None:
            found.wake()

    def close(self) -> None:
        for timeline in self.timelines.values():
            timeline.close()
        if self.api is not None:
            self.api.close()  # the API's waiting requests: 503, come back

    # -- what the person said --------------------------------------------------------

    def said(self, conversation: ConversationId, text: str, files: list[str]) -> None:
        self._emit(conversation, "user", {"html": plain(text), "files": files, "at": _now()})

    def notice(
        self, conversation: ConversationId, text: str, tone: str = "info"
    ) -> anyio.Event | None:
        data = {"html": plain(text), "tone": tone, "at": _now()}
        return self._emit(conversation, "notice", data)

    # -- the pump's deliveries -------------------------------------------------------

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if (api := self._api(conversation_id)) is not None:
            api.deliver(conversation_id, event)  # a request of the API waits for it
            return
        await self._after_finals(conversation_id)
        if isinstance(event, TurnStarted):
            self._start(conversation_id)
        elif isinstance(event, TextUpdate):
            turn = self._turns.get(conversation_id) or self._start(conversation_id)
            for activity in event.activity:
                text = notices.tool_activity(activity)
                self._emit(conversation_id, "activity", {"turn": turn.id, "text": text})
            if event.text:
                turn.text += event.text
                self._emit(
                    conversation_id,
                    "partial",
                    {"turn": turn.id, "html": markdown(turn.text)},
                    turn.id,
                )
        elif isinstance(event, TurnCompleted):
            self._finish(conversation_id, event.text)
        elif isinstance(event, TurnFailed):
            # The answer so far ends with what cut it, in its own bubble (as on every
            # transport): a cut answer never looks complete, after a reload too.
            cancelled = event.error.code is ErrorCode.CANCELLED
            self._finish(conversation_id, failure_text(event), "info" if cancelled else "error")
        elif isinstance(event, Notice):
            self.notice(conversation_id, event.text, event.tone)
        elif isinstance(event, ToolImage | VoiceClip):
            self._file(conversation_id, event)

    def _start(self, conversation: ConversationId) -> _Turn:
        turn = self._turns[conversation] = _Turn(secrets.token_hex(6))
        self._emit(conversation, "turn", {"turn": turn.id})
        return turn

    def _finish(self, conversation: ConversationId, text: str, failed: str | None = None) -> None:
        turn = self._turns.pop(conversation, None) or _Turn(secrets.token_hex(6))
        self._emit_final(conversation, turn.id, markdown(text), failed)

    # -- finals kept as outbox rows, through the engine -----------------------------

    def _api(self, conversation: ConversationId) -> ServedApi | None:
        """The API, when one of its requests waits for ``conversation``'s events."""
        return self.api if self.api is not None and self.api.owns(conversation) else None

    async def _after_finals(self, conversation: ConversationId) -> None:
        """Until the conversation's finals queued in the engine are on the page."""
        engine = self.engine
        if engine is not None and engine.pending(conversation):
            await engine.outbox(conversation).wait_empty()

    def passes_final(self, conversation_id: ConversationId) -> bool:
        """A request of the API waits for this conversation's final as its event (with
        the turn's usage): it is delivered as it is, not through the engine."""
        return self._api(conversation_id) is not None

    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        turn = self._turns.pop(conversation_id, None) if ends_turn else None
        noted = journal.progress.get("turn")  # a row resumed: the turn its page opened
        turn_id = turn.id if turn else noted if isinstance(noted, str) else secrets.token_hex(6)
        engine, api = self.engine, self._api(conversation_id)
        if api is not None or engine is None or not text.strip():
            # An API's request taken over after a restart, a page without its engine
            # (one built apart from the plug-in), or nothing to show but the turn's end.
            if api is not None:
                api.deliver(conversation_id, Notice(text, "info"))
            else:
                self._emit_final(conversation_id, turn_id, markdown(text))
            await journal.confirm()
            return
        closing = _Closing(journal, turn_id)
        await engine.deliver_final(conversation_id, text, closing, ends_turn=ends_turn)

    async def deliver_notice(
        self, conversation_id: ConversationId, notice: Notice, journal: DeliveryJournal
    ) -> None:
        """A notice kept as an outbox row (a detached failure): a notice with its tone,
        in plain text, after the finals still queued; confirmed once on the page (on
        replicas: in the store)."""
        if (api := self._api(conversation_id)) is not None:
            api.deliver(conversation_id, notice)
        else:
            await self._after_finals(conversation_id)
            written = self.notice(conversation_id, notice.text, notice.tone)
            if written is not None:
                await written.wait()
        await journal.confirm()

    async def final_once(self, conversation: ConversationId, key: str, html: str) -> str:
        """The engine's send: append the final ``html`` unless the page has an event
        with ``key`` already (a send made again); the key is the event's reference."""
        if self.relay is not None:
            try:
                await self.relay.catch_up(conversation)  # what the store has, first
            except Exception as exc:
                raise PageUnreachableError from exc
        events = self.timeline(conversation).events()
        if not any(e.kind == "final" and e.data.get("key") == key for e in events):
            turn = self._turn_of(conversation, key) or secrets.token_hex(6)
            written = self._emit_final(conversation, turn, html, key=key)
            if written is not None:
                await written.wait()  # in the store before the row is confirmed
        return key

    def _turn_of(self, conversation: ConversationId, key: str) -> str | None:
        """The turn the final being sent with ``key`` closes (its row's)."""
        engine = self.engine
        if engine is None or not engine.pending(conversation):
            return None
        for view in engine.outbox(conversation).views:
            if isinstance(view, View) and view.key == key and isinstance(view.journal, _Closing):
                return view.journal.turn
        return None

    def _emit_final(
        self,
        conversation: ConversationId,
        turn: str,
        html: str,
        failed: str | None = None,
        key: str | None = None,
    ) -> anyio.Event | None:
        data = {"turn": turn, "html": html, "at": _now()}
        if failed is not None:
            data["failed"] = failed  # the bubble's tone: info (cancelled) or error
        if key is not None:
            data["key"] = key  # the delivery's key: a send made again finds it
        return self._emit(conversation, "final", data, turn)

    def _file(self, conversation: ConversationId, file: ToolImage | VoiceClip) -> None:
        """A tool's image or a spoken answer's clip, with its caption: kept to serve at
        ``/media/<key>`` (the most recent :data:`IMAGES_KEPT`)."""
        key = secrets.token_urlsafe(12)
        self._images[key] = (conversation, file.media_type, file.data)
        if self.relay is not None:
            self.relay.keep_file(conversation, key, file.media_type, file.data)
        while len(self._images) > IMAGES_KEPT:
            self._images.popitem(last=False)
        if isinstance(file, VoiceClip):
            kind, caption = "audio", notices.voice_clip(file.part, file.parts)
        else:
            kind, caption = "image", notices.tool_image(file.tool, file.media_type, len(file.data))
        self._emit(conversation, kind, {"url": f"/media/{key}", "caption": plain(caption)})

    def image(self, conversation: ConversationId, key: str) -> tuple[str, bytes] | None:
        """A tool image of this conversation (never another principal's)."""
        found = self._images.get(key)
        if found is None or found[0] != conversation:
            return None
        return found[1], found[2]

    # -- approvals ---------------------------------------------------------------------

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        if self._api(conversation_id) is not None:
            return ApprovalAnswer("denied", "nobody to ask over the API")
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
