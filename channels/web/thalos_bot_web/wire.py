"""The page's wire for the kit's delivery engine: an outbox row's final answer is one
``final`` event on the conversation's page, appended once per key.

The page has no platform between the daemon and the browser: no length limit, no flood
control, nothing that answers 5xx. So the engine is given only the finals, and no
previews (the turn's ``partial`` events are the adapter's own). A send made again with
the same key (``resend = "repeat"``) finds its ``final`` event on the page and appends
nothing. On replicas the conversation's events are read from the shared store first,
and the send returns once its event is written there.
"""

from __future__ import annotations

from typing import Protocol

from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.channel import WireAdapter, rendering_for
from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_web.render import markdown, plain

LIMITS = WireLimits(
    message_units=1 << 24,  # one message however long (the page's own bound is the input's)
    caption_units=1 << 24,
    chat_min_interval=0.0,
    global_rate=1000.0,
    resend="repeat",
    chat_burst=1000,
    global_burst=1000,
)


class PageUnreachableError(Exception):
    """The shared store's page events could not be read or written (replicas): the
    final is appended again later."""


class NotOnThePageError(Exception):
    """What a page does not do: edit an event, upload through the engine (a tool's image
    is the adapter's own event)."""


class Finals(Protocol):
    """The adapter's side: the page a final is appended to."""

    async def final_once(self, conversation: ConversationId, key: str, html: str) -> str:
        """Append the final ``html`` unless an event with ``key`` is on the page; its
        reference."""
        ...


class PageWire:
    name = "web"
    limits = LIMITS

    def __init__(self, page: Finals) -> None:
        self._page = page

    def render(self, source: str) -> str:
        return markdown(source)

    def classify(self, exc: Exception) -> Classified | None:
        if isinstance(exc, PageUnreachableError):
            return Classified(Failure.NOT_SENT, "page events unreachable")
        if isinstance(exc, NotOnThePageError):
            return Classified(Failure.NOT_EDITABLE, str(exc))
        return None

    async def send(self, chat: ConversationId, message: Outgoing[None]) -> str:
        html = plain(message.text) if message.plain else message.text
        return await self._page.final_once(chat, message.key, html)

    async def edit(self, chat: ConversationId, ref: str, message: Outgoing[None]) -> None:
        # Unreached without previews; were it asked, the part goes as a new final.
        raise NotOnThePageError("a page event is not edited")

    async def upload(
        self, chat: ConversationId, image: ToolImage | VoiceClip, caption: Outgoing[None]
    ) -> str:
        raise NotOnThePageError("files are the adapter's own events")

    async def typing(self, chat: ConversationId, thread: str | None) -> None:
        """Nothing to call: the page's ``turn`` event shows an answer being written."""

    async def find(self, chat: ConversationId, key: str) -> str | None:
        """Unused (``resend`` is ``"repeat"``: :meth:`send` itself finds the key)."""
        return None


def page_engine(page: Finals, group: TaskGroup) -> WireAdapter[ConversationId, None]:
    """The kit's engine over the page's wire, its senders in ``group``: a conversation
    is its own chat (one person's, no thread), and no previews are streamed."""
    return WireAdapter(
        PageWire(page),
        group,
        rendering_for(LIMITS, "off"),
        channel_id=ChannelId("web"),
        parse=lambda conversation: (conversation, None),
        private=lambda conversation: True,
    )
