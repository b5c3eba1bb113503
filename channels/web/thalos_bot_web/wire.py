"""The page's wire for the kit's delivery engine: an answer streams into the page as
events, as a message streams on any transport by edits.

The answer's one message is its turn on the page, named by the key the engine sent it
with: a live part sent or edited is a ``partial`` event (the timeline keeps the turn's
latest only), and the complete part is the turn's ``final`` event, appended once (a send
made again with the same key, ``resend = "repeat"``, finds it on the page and appends
nothing). An upload is an ``image`` or ``audio`` event, found by its key the same way.
The page has no platform between the daemon and the browser: no length limit,
no flood control, nothing that answers 5xx. A final or an upload returns once it is
in the daemon's store (whose events it reads first), so the engine confirms its row
only then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.channel import WireAdapter, rendering_for
from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_web.render import markdown, plain

if TYPE_CHECKING:
    from thalos_bot_web.adapter import WebAdapter

LIMITS = WireLimits(
    message_units=1 << 24,  # one message however long (the page's own bound is the input's)
    caption_units=1 << 24,
    chat_min_interval=0.0,
    global_rate=1e6,  # nothing to pace between the daemon and the browser
    resend="repeat",
    chat_burst=1000,
    global_burst=1000,
    typing_interval=3600.0,  # the page's ``turn`` event shows the answer being written
    final_call=True,  # the final is its own event (its time, the turn closed)
)


class PageUnreachableError(Exception):
    """The shared store's page events or files could not be read or written
    (replicas): the final or the upload is made again later."""


class PageWire:
    name = "web"
    limits = LIMITS

    def __init__(self, page: WebAdapter) -> None:
        self._page = page

    def render(self, source: str) -> str:
        return markdown(source)

    def classify(self, exc: Exception) -> Classified | None:
        if isinstance(exc, PageUnreachableError):
            return Classified(Failure.NOT_SENT, "page events unreachable")
        return None

    async def send(self, chat: ConversationId, message: Outgoing[None]) -> str:
        await self.edit(chat, message.key, message)
        return message.key  # the turn the page shows the answer in

    async def edit(self, chat: ConversationId, ref: str, message: Outgoing[None]) -> None:
        html = plain(message.text) if message.plain else message.text
        await self._page.show(chat, ref, html, message.complete)

    async def upload(
        self, chat: ConversationId, image: ToolImage | VoiceClip, caption: Outgoing[None]
    ) -> str:
        await self._page.keep(chat, caption.key, image, caption.text)
        return caption.key

    async def typing(self, chat: ConversationId, thread: str | None) -> None:
        """Nothing to call: the page's ``turn`` event shows an answer being written."""


def page_engine(page: WebAdapter, group: TaskGroup) -> WireAdapter[ConversationId, None]:
    """The kit's engine over the page's wire, its senders in ``group``: a conversation
    is its own chat (one person's, no thread), and answers stream by edits."""
    return WireAdapter(
        PageWire(page),
        group,
        rendering_for(LIMITS, "edit"),
        channel_id=ChannelId("web"),
        parse=lambda conversation: (conversation, None),
        private=lambda conversation: True,
    )
