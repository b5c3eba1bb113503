"""In a chat's outbox, a command's reply goes before the files of an answer already out
(tool images, the answer read aloud: uploads that take a while), never before an
answer's text; the files keep their order, and any other notice waits behind them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from tests.channels.kit.test_engine import Wire
from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.failure import Classified
from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.view import View
from thalos_bot.channels.delivery.wire import Outgoing
from thalos_bot.channels.pacing.gate import ChatGate
from thalos_bot.channels.ports import Notice, TurnStarted
from thalos_bot.domain.events import TokenUsage, ToolImage, TurnCompleted, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId

pytestmark = pytest.mark.anyio

CHAT = ConversationId("chat")


class SlowUploads:
    """A platform whose uploads wait for ``released`` (a slow upload); what the chat
    shows is ``shown``, in order."""

    name = "fake"
    limits = Wire.limits

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.uploading = anyio.Event()
        self.released = anyio.Event()

    def render(self, source: str) -> str:
        return source

    def classify(self, exc: Exception) -> Classified | None:
        return None

    async def send(self, chat: str, message: Outgoing[None]) -> str:
        self.shown.append(message.text)
        return str(len(self.shown))

    async def edit(self, chat: str, ref: str, message: Outgoing[None]) -> None:
        raise AssertionError("nothing here is edited")

    async def upload(self, chat: str, image: ToolImage | VoiceClip, caption: Outgoing[None]) -> str:
        self.uploading.set()
        await self.released.wait()
        assert isinstance(image, ToolImage)
        self.shown.append(f"image {image.tool}")
        return str(len(self.shown))

    async def typing(self, chat: str, thread: str | None) -> None:
        pass

    async def find(self, chat: str, key: str) -> str | None:
        return None


@asynccontextmanager
async def channel(wire: SlowUploads) -> AsyncIterator[WireAdapter[str, None]]:
    async with anyio.create_task_group() as group:
        yield WireAdapter(
            wire,
            group,
            Rendering("edit", 5.0, backoff_initial=0.01, backoff_max=0.05),
            channel_id=ChannelId("fake"),
            parse=lambda conversation: (conversation, None),
            private=lambda _chat: True,
        )
        group.cancel_scope.cancel()


ANSWER = TurnCompleted(SessionId("s"), "The answer.", TokenUsage(), (), 0.1)


def image(tool: str) -> ToolImage:
    return ToolImage(SessionId("s"), tool, "image/png", b"\x89PNG")


async def test_a_commands_reply_goes_before_the_files_still_queued() -> None:
    wire = SlowUploads()
    with anyio.fail_after(10):
        async with channel(wire) as adapter:
            await adapter.deliver(CHAT, TurnStarted())
            await adapter.deliver(CHAT, ANSWER)
            for tool in ("a", "b"):
                await adapter.deliver(CHAT, image(tool))
            await wire.uploading.wait()  # the first image is on its way
            await adapter.deliver(CHAT, Notice("Agent: Helper, idle", command=True))
            await adapter.deliver(CHAT, Notice("Some other notice"))
            wire.released.set()
            await adapter.drain()
    assert wire.shown == [
        "The answer.",
        "image a",  # begun already
        "Agent: Helper, idle",
        "image b",
        "Some other notice",
    ]


def test_a_commands_reply_never_goes_before_an_answers_text() -> None:
    """Files queued behind an answer whose text is not out yet: the reply waits for that
    text (then goes before the files)."""
    outbox: ChatOutbox[str, None] = ChatOutbox(
        "chat", ChatGate(0.0), private=True, caption_limit=1024
    )
    outbox.apply(TurnStarted())
    outbox.apply(ANSWER)
    outbox.apply(image("a"))
    outbox.apply(Notice("Agent: Helper, idle", command=True))
    answer = outbox.current()
    assert isinstance(answer, View)
    assert answer.kind == "answer"
    outbox.views.popleft()  # the answer's text is out
    reply = outbox.current()
    assert isinstance(reply, View)
    assert reply.text == "Agent: Helper, idle"
