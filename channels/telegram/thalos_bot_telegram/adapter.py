"""The Telegram adapter: the kit's engine (:mod:`thalos_bot.channels.delivery.channel`)
over Telegram's wire, with what is Telegram's own.

A conversation is a chat, or a forum topic in one (``"<chat>:<thread>"``, see
:mod:`thalos_bot_telegram.addressing`). The topics of one forum share the chat's outbox
and sender: Telegram paces a chat as a whole, and a send in doubt is checked by message
id, which all topics of a chat draw from, so nothing else may go to the chat meanwhile.

The adapter also notes the id of every message that arrives in a private chat or a
group (:meth:`TelegramAdapter.watching`), admitted or not, in the counter it was drawn
from (:mod:`thalos_bot_telegram.counter`), for the check of a send in doubt
(:mod:`thalos_bot_telegram.uncertain`). The account's highest id, and each id of a
chat the bot talks with, is kept in the database, so a restarted daemon knows it too
(see :mod:`thalos_bot.channels.delivery.markbook`); a stranger's chat leaves no mark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import structlog
from anyio.abc import TaskGroup
from telegram import Bot, InlineKeyboardMarkup, Update
from telegram.constants import ChatType

from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.journal import floor_of
from thalos_bot.channels.delivery.markbook import MarkBook
from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.photo import PhotoView
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.view import View
from thalos_bot.channels.pacing.gate import ChatGate
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_telegram.counter import KEPT_OWNERS, Counter, shared_counter
from thalos_bot_telegram.inbound import admit_each
from thalos_bot_telegram.sender import ChatSender, Outbox
from thalos_bot_telegram.wire import TelegramWire

log = structlog.get_logger(__name__)

_WATCHED = frozenset({ChatType.PRIVATE, ChatType.GROUP, ChatType.SUPERGROUP})


class TelegramAdapter(WireAdapter[int, InlineKeyboardMarkup]):
    def __init__(
        self,
        bot: Bot,
        group: TaskGroup,
        rendering: Rendering,
        *,
        chat_min_interval: float,
        global_max_rate: float,
        marks: MarkBook | None = None,
        known: Mapping[int, int] | None = None,
    ) -> None:
        wire = TelegramWire(bot, chat_min_interval=chat_min_interval, global_rate=global_max_rate)
        super().__init__(
            wire, group, rendering, channel_id=ChannelId(wire.name), parse=_chat, private=_private
        )
        self.telegram = wire
        self.marks = marks
        """Where each chat's highest known message id is kept across restarts."""
        self._known: dict[int, int] = dict(known or {})
        """Each chat's mark as the previous process left it (see
        :mod:`thalos_bot.channels.delivery.markbook`)."""
        self._seen: dict[int, int] = dict(self._known)
        """The highest message id known in each chat that has no outbox yet (only in
        memory: a chat's mark is written once the bot talks with it)."""
        self._types: dict[int, str] = {}
        """The type of each group heard from (a private chat's id is positive)."""
        self.account = Counter(shared=True, bound=marks.account if marks is not None else 0)
        """The bot account's counter: every private chat's and basic group's ids."""
        if marks is not None:
            self.account.on_raised = marks.note_account
        self._own: dict[int, Counter] = {}
        """Each supergroup's counter."""
        for chat, mark in self._known.items():
            if shared_counter(chat, None):
                self.account.saw(chat, mark)  # that chat's latest: not another chat's

    def counter_for(self, chat_id: int) -> Counter:
        """The counter the chat's messages are numbered by."""
        if shared_counter(chat_id, self._types.get(chat_id) if chat_id < 0 else "private"):
            return self.account
        if chat_id not in self._own:
            self._own[chat_id] = Counter(shared=False, bound=self._known.get(chat_id, 0))
        return self._own[chat_id]

    # -- the engine's adapter, refined ---------------------------------------------------

    def _new_outbox(self, chat: int) -> Outbox:
        outbox = Outbox(chat, ChatGate(self.wire.limits.chat_min_interval), self.marks)
        seen = self._seen.pop(chat, None)
        if seen is not None:
            outbox.saw(seen)
        return outbox

    def _new_sender(self, outbox: ChatOutbox[int, InlineKeyboardMarkup]) -> ChatSender:
        assert isinstance(outbox, Outbox)
        chat = outbox.chat_id
        return ChatSender(
            self.telegram,
            outbox,
            self.rendering,
            self.pacer,
            lambda: self.counter_for(chat),
            told=self._tell,
        )

    def _tell(self, chat: int | None, seconds: float) -> None:
        self.told(chat, seconds)  # looked up at each 429: the plugin sets it late

    def _resumed(self, chat: int, view: View | PhotoView, progress: Mapping[str, object]) -> None:
        kind = progress.get("counter")
        if chat < 0 and chat not in self._types and kind in {"account", "chat"}:
            self._types[chat] = "group" if kind == "account" else "supergroup"
        counter = self.counter_for(chat)
        floor = floor_of(progress)
        if floor is not None:
            counter.raise_bound(floor)  # an id known when the send was made
        if view.doubt is not None:
            counter.resumed(chat)

    # -- Telegram's own ------------------------------------------------------------------

    def watching(
        self, dispatch: Callable[[Sequence[Update]], None]
    ) -> Callable[[Sequence[Update]], None]:
        """``dispatch``, after noting the id of each message the updates carry."""

        def noted(updates: Sequence[Update]) -> None:
            admit_each(updates, self.saw)  # one malformed update never stops the batch
            dispatch(updates)

        return noted

    async def noting(self, updates: Sequence[Update]) -> None:
        """Note the ids a batch carries and write the marks, before the batch is
        acknowledged: a restarted daemon then knows every id Telegram no longer holds
        for it (the batch is noted again when it is handed over)."""
        admit_each(updates, self.saw)
        if self.marks is not None:
            await self.marks.flush()

    def saw(self, update: Update) -> None:
        """Note a new message's id in a private chat or a group, in its counter (a
        channel is left alone; a malformed update is for admission to judge). The
        chat's own mark is kept only once the bot talks with it (it has an outbox)."""
        message = getattr(update, "message", None)
        chat = getattr(message, "chat", None)
        chat_id = getattr(chat, "id", None)
        message_id = getattr(message, "message_id", None)
        chat_type = getattr(chat, "type", None)
        if not isinstance(chat_type, str) or chat_type not in _WATCHED:
            return
        if not isinstance(chat_id, int) or not isinstance(message_id, int):
            return
        if chat_id < 0:
            self._types[chat_id] = chat_type
        self.counter_for(chat_id).heard(chat_id, message_id)
        outbox = self._outboxes.get(chat_id)
        if isinstance(outbox, Outbox):
            outbox.saw(message_id)
        elif message_id > self._seen.get(chat_id, 0):
            self._seen.pop(chat_id, None)
            self._seen[chat_id] = message_id  # newest last: the oldest go first
            if len(self._seen) > KEPT_OWNERS:
                del self._seen[next(iter(self._seen))]


def _chat(conversation_id: ConversationId) -> tuple[int, str | None]:
    """A chat, or a forum topic in it (``"<chat>:<thread>"``)."""
    chat, sep, thread = conversation_id.partition(":")
    return int(chat), str(int(thread)) if sep else None


def _private(chat: int) -> bool:
    """Private chats have positive ids; groups, supergroups and channels negative."""
    return chat > 0
