"""A send-only side's wire that is never called: for the any-replica tests and bench,
where nothing is answered."""

from __future__ import annotations

from anyio.abc import TaskGroup

from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.failure import Classified
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.registry import ChannelPair
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot.domain.ids import ChannelId


class Unsent:
    """The wire of a channel ``name`` that sends nothing."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.limits = WireLimits(
            message_units=4000,
            caption_units=1000,
            chat_min_interval=1.0,
            global_rate=50.0,
            resend="find",
        )

    def render(self, source: str) -> str:
        return source

    def classify(self, exc: Exception) -> Classified | None:
        return None

    async def send(self, chat: str, message: Outgoing[None]) -> str:
        raise AssertionError("nothing is sent here")

    async def edit(self, chat: str, ref: str, message: Outgoing[None]) -> None:
        raise AssertionError("nothing is sent here")

    async def upload(self, chat: str, image: ToolImage | VoiceClip, caption: Outgoing[None]) -> str:
        raise AssertionError("nothing is sent here")

    async def typing(self, chat: str, thread: str | None) -> None:
        pass

    async def find(self, chat: str, key: str) -> str | None:
        return None


def unsent_pair(name: str, group: TaskGroup) -> ChannelPair:
    """A send-only side of channel ``name`` (an inlet, a wire adapter) that sends nothing."""
    adapter: WireAdapter[str, None] = WireAdapter(
        Unsent(name),
        group,
        Rendering("edit", 5.0, 1.0, 10.0),
        channel_id=ChannelId(name),
        parse=lambda conversation: (str(conversation), None),
        private=lambda chat: True,
    )
    return ChannelPair(Inlet(ChannelId(name)), adapter)
