"""Deliveries to Discord conversations: streamed answers, finals, notices, images, questions.

Each conversation has one worker that writes in order (the items queued for it), paced
within the channel's bucket (:mod:`thalos_bot_discord.pacing`). Streamed text is
coalesced: it accumulates in the turn's :class:`TurnView` as it arrives, and the worker,
once a write fits, shows all of it in one edit. The final answer replaces the preview
(parts edited in place, more posted), and an outbox row is confirmed once every part is
shown.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import discord
import structlog
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from thalos_bot.channels import notices
from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.ports import Delivery, Notice, TextUpdate, TurnStarted
from thalos_bot.domain.events import ToolImage, TurnCompleted, TurnFailed
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest
from thalos_bot_discord.addressing import Place
from thalos_bot_discord.pacing import ChannelPace
from thalos_bot_discord.stream import TurnView
from thalos_bot_discord.wire import Image, Refused, Writer, new_nonce

log = structlog.get_logger(__name__)

IMAGE_NAMES = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


@dataclass
class Wake:
    view: TurnView


@dataclass
class End:
    view: TurnView


@dataclass
class Post:
    """A message of its own: a notice, an outbox notice, or a tool's image."""

    text: str
    journal: DeliveryJournal | None = None
    image: ToolImage | None = None
    nonce: str = field(default_factory=new_nonce)


@dataclass
class Ask:
    text: str
    view: discord.ui.View
    posted: anyio.Event = field(default_factory=anyio.Event)
    message_id: int | None = None


Item = Wake | End | Post | Ask
AskHandler = Callable[[ConversationId, ApprovalRequest], Awaitable[ApprovalAnswer]]


class DiscordAdapter:
    def __init__(
        self,
        client: discord.Client,
        writer: Writer,
        group: TaskGroup,
        *,
        channel_id: ChannelId,
        edits_per_window: int,
        edit_window: float,
    ) -> None:
        self.channel_id = channel_id
        self._client = client
        self._writer = writer
        self._group = group
        self._pace = (edits_per_window, edit_window)
        self._paces: dict[int, ChannelPace] = {}
        self._queues: dict[ConversationId, MemoryObjectSendStream[Item]] = {}
        self._current: dict[ConversationId, TurnView] = {}
        self._dm_channels: dict[int, int] = {}
        self._busy = 0
        self._idle = anyio.Event()
        self._idle.set()
        self.asker: AskHandler | None = None

    # -- the ports ----------------------------------------------------------------------

    @property
    def flush_interval(self) -> float | None:
        """One edit per channel's share of its bucket (5 per 5 s: one a second)."""
        limit, window = self._pace
        return window / limit

    def knows_dm(self, user_id: int, channel_id: int) -> None:
        self._dm_channels[user_id] = channel_id

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        if isinstance(event, TurnStarted):
            self._current[conversation_id] = TurnView()
            self._group.start_soon(self._typing, conversation_id)
        elif isinstance(event, TextUpdate):
            view = self._view(conversation_id)
            view.text += event.text
            if not view.wake_queued and event.text:
                view.wake_queued = True
                self._put(conversation_id, Wake(view))
        elif isinstance(event, TurnCompleted):
            view = self._ending(conversation_id)
            view.final = event.text or notices.no_answer()
            self._put(conversation_id, End(view))
        elif isinstance(event, TurnFailed):
            view = self._ending(conversation_id)
            failure = notices.turn_failed(event.error)
            view.final = f"{view.text}\n\n{failure}" if view.text.strip() else failure
            self._put(conversation_id, End(view))
        elif isinstance(event, Notice):
            self._put(conversation_id, Post(event.text))
        elif isinstance(event, ToolImage):
            self._put(
                conversation_id,
                Post(
                    notices.tool_image(event.tool, event.media_type, len(event.data)), image=event
                ),
            )

    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        try:
            Place.parse(conversation_id)
        except ValueError:
            log.error("discord_bad_conversation_id", conversation=conversation_id)  # noqa: TRY400
            await journal.refuse()
            return
        if not ends_turn:
            progress = dict(journal.progress)
            post = Post(text, journal)
            nonce = progress.get("nonce")
            if isinstance(nonce, str):
                post.nonce = nonce
            self._put(conversation_id, post)
            return
        view = self._ending(conversation_id)
        view.resume(dict(journal.progress))
        view.final = text or notices.no_answer()
        view.journal = journal
        self._put(conversation_id, End(view))

    async def ask_approval(
        self, conversation_id: ConversationId, request: ApprovalRequest
    ) -> ApprovalAnswer:
        if self.asker is None:
            return ApprovalAnswer("denied", "no approver")
        return await self.asker(conversation_id, request)

    async def ask(
        self, conversation_id: ConversationId, text: str, view: discord.ui.View
    ) -> int | None:
        """Post a question with buttons after what is queued; its message id (None: it
        could not be posted)."""
        item = Ask(text, view)
        self._put(conversation_id, item)
        await item.posted.wait()
        return item.message_id

    async def edit(self, conversation_id: ConversationId, message_id: int, text: str) -> None:
        """Close a question: its text replaced, its buttons gone."""
        channel = await self._channel_of(conversation_id)
        if channel is None:
            return
        await self._slot(channel)
        try:
            await self._writer.edit(channel, message_id, text, drop_view=True)
        except Refused:
            return

    async def drain(self) -> None:
        await self._idle.wait()

    def close(self) -> None:
        """No more deliveries: each conversation's worker ends once its queue is empty."""
        for queue in self._queues.values():
            queue.close()

    # -- the workers --------------------------------------------------------------------

    def _ending(self, conversation_id: ConversationId) -> TurnView:
        """The turn's view, no longer the conversation's current one (a new one if the
        turn streamed nothing)."""
        view = self._current.pop(conversation_id, None)
        return TurnView() if view is None else view

    def _view(self, conversation_id: ConversationId) -> TurnView:
        view = self._current.get(conversation_id)
        if view is None:
            view = self._current[conversation_id] = TurnView()
        return view

    def _put(self, conversation_id: ConversationId, item: Item) -> None:
        queue = self._queues.get(conversation_id)
        if queue is None:
            send, receive = anyio.create_memory_object_stream[Item](math.inf)
            self._queues[conversation_id] = queue = send
            self._group.start_soon(
                self._work, conversation_id, receive, name=f"discord-{conversation_id}"
            )
        self._busy += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        queue.send_nowait(item)

    async def _work(
        self, conversation_id: ConversationId, receive: MemoryObjectReceiveStream[Item]
    ) -> None:
        async with receive:
            async for item in receive:
                try:
                    await self._handle(conversation_id, item)
                except Exception:
                    log.exception("discord_delivery_failed", conversation=conversation_id)
                finally:
                    if isinstance(item, Ask):
                        item.posted.set()
                    self._busy -= 1
                    if self._busy == 0:
                        self._idle.set()

    async def _handle(self, conversation_id: ConversationId, item: Item) -> None:
        channel = await self._channel_of(conversation_id)
        if channel is None:
            if isinstance(item, End | Post) and (
                journal := item.journal if isinstance(item, Post) else item.view.journal
            ):
                await journal.refuse()
            return
        if isinstance(item, Wake):
            if item.view.ended:
                return
            await self._slot(channel)
            item.view.wake_queued = False
            await self._show(channel, item.view)
        elif isinstance(item, End):
            item.view.ended = True
            await self._show(channel, item.view, final=True)
        elif isinstance(item, Post):
            await self._post(channel, item)
        else:
            await self._slot(channel)
            try:
                item.message_id = await self._writer.post(
                    channel, item.text, nonce=new_nonce(), view=item.view
                )
            except Refused:
                item.message_id = None

    async def _show(self, channel: int, view: TurnView, *, final: bool = False) -> None:
        parts = view.parts()
        journal = view.journal
        try:
            for index, part in enumerate(parts):
                if index < len(view.ids):
                    if index < len(view.shown) and view.shown[index] == part:
                        continue
                    await self._slot(channel)
                    await self._writer.edit(channel, view.ids[index], part)
                    view.shown[index] = part
                    continue
                await self._slot(channel)
                if journal is not None:
                    await journal.save(view.progress())
                view.ids.append(
                    await self._writer.post(channel, part, nonce=view.part_nonce(index))
                )
                view.shown.append(part)
                if journal is not None:
                    await journal.save(view.progress())
        except Refused as refused:
            if journal is not None and refused.status in {400, 403, 404}:
                await journal.refuse()
            return
        if final and journal is not None:
            await journal.confirm()

    async def _post(self, channel: int, item: Post) -> None:
        await self._slot(channel)
        images: tuple[Image, ...] = ()
        if item.image is not None:
            suffix = IMAGE_NAMES.get(item.image.media_type, "bin")
            images = (Image(item.image.data, f"image.{suffix}"),)
        try:
            if item.journal is not None:
                await item.journal.save({"nonce": item.nonce})
            for index, part in enumerate(split_notice(item.text)):
                await self._writer.post(
                    channel,
                    part,
                    nonce=f"{item.nonce}.{index}",
                    images=images if index == 0 else (),
                )
        except Refused as refused:
            if item.journal is not None and refused.status in {400, 403, 404}:
                await item.journal.refuse()
            return
        if item.journal is not None:
            await item.journal.confirm()

    async def _slot(self, channel: int) -> None:
        pace = self._paces.get(channel)
        if pace is None:
            pace = self._paces[channel] = ChannelPace(*self._pace)
        await pace.slot()

    async def _typing(self, conversation_id: ConversationId) -> None:
        channel = await self._channel_of(conversation_id)
        if channel is not None:
            await self._writer.typing(channel)

    async def _channel_of(self, conversation_id: ConversationId) -> int | None:
        try:
            place = Place.parse(conversation_id)
        except ValueError:
            log.error("discord_bad_conversation_id", conversation=conversation_id)  # noqa: TRY400
            return None
        if place.kind != "dm":
            return place.id
        known = self._dm_channels.get(place.id)
        if known is not None:
            return known
        try:
            user = self._client.get_user(place.id)
            if user is None:
                await self._writer.turn()
                user = await self._client.fetch_user(place.id)
            if user.dm_channel is None:
                await self._writer.turn()
            dm = await user.create_dm()
        except (discord.HTTPException, OSError) as exc:
            log.warning("discord_dm_unavailable", user=place.id, error=type(exc).__name__)
            return None
        self._dm_channels[place.id] = dm.id
        return dm.id


def split_notice(text: str) -> list[str]:
    from thalos_bot_discord.chunking import split

    return split(text) or [text]
