"""A kept clip's upload, journaled like a final's part (:meth:`WireAdapter.deliver_clip`):
its key is saved before the call, the row confirmed when the upload returns and refused
when it is refused for good; a daemon killed while the upload was in flight (arrived or
not) shows the clip once after a restart, on a platform that dedupes on the key
(``repeat``) and on one that is looked at first (``find``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import pytest

from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits
from thalos_bot.domain.events import ToolImage, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId

pytestmark = pytest.mark.anyio

CHAT = ConversationId("chat")
CLIP = VoiceClip(SessionId("s"), "audio/ogg", b"OggS-clip", 1.5, 1, 1, (3, 200))


class RefusedError(Exception):
    """The platform refused the file for good."""


@dataclass
class Platform:
    """Uploads by id. ``dedupes``: an upload with a key it has seen answers the one it
    made (Discord's nonce); otherwise every upload is a new message (Telegram)."""

    dedupes: bool
    clips: dict[str, bytes] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    script: list[str] = field(default_factory=list)
    """What each next upload does: ``"hang"`` after it arrived, ``"hang_before"`` before
    it arrives, ``"refuse"``; otherwise it arrives and answers."""
    hung: anyio.Event = field(default_factory=anyio.Event)
    uploads: int = 0
    finds: int = 0

    async def upload(self, key: str, data: bytes) -> str:
        self.uploads += 1
        what = self.script.pop(0) if self.script else "answer"
        if what == "refuse":
            raise RefusedError
        if what == "hang_before":
            self.hung.set()
            await anyio.sleep_forever()
        ref = self.keys.get(key) if self.dedupes else None
        if ref is None:
            ref = str(len(self.clips))
            self.clips[ref] = data
            self.keys[key] = ref
        if what == "hang":
            self.hung.set()
            await anyio.sleep_forever()
        return ref


class Wire:
    name = "fake"

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.limits = WireLimits(
            message_units=4096,
            caption_units=1024,
            chat_min_interval=0.0,
            global_rate=1000.0,
            resend="repeat" if platform.dedupes else "find",
        )

    def render(self, source: str) -> str:
        return source

    def classify(self, exc: Exception) -> Classified | None:
        if isinstance(exc, RefusedError):
            return Classified(Failure.REJECTED, "refused")
        return None

    async def send(self, chat: str, message: Outgoing[None]) -> str:
        raise AssertionError("a clip is uploaded, never sent as text")

    async def edit(self, chat: str, ref: str, message: Outgoing[None]) -> None:
        raise AssertionError("a clip is never edited")

    async def upload(self, chat: str, image: ToolImage | VoiceClip, caption: Outgoing[None]) -> str:
        return await self.platform.upload(caption.key, image.data)

    async def typing(self, chat: str, thread: str | None) -> None:
        pass

    async def find(self, chat: str, key: str) -> str | None:
        self.platform.finds += 1
        return self.platform.keys.get(key)


@dataclass
class Journal:
    """An outbox row's journal, kept across the "processes" of a test."""

    progress: Mapping[str, object] = field(default_factory=dict)
    saved: list[Mapping[str, object]] = field(default_factory=list)
    confirmed: anyio.Event = field(default_factory=anyio.Event)
    refused: anyio.Event = field(default_factory=anyio.Event)

    async def save(self, progress: Mapping[str, object]) -> None:
        self.progress = dict(progress)
        self.saved.append(dict(progress))

    async def confirm(self) -> None:
        self.confirmed.set()

    async def refuse(self) -> None:
        self.refused.set()

    def again(self) -> Journal:
        """The same row, read back by the next process."""
        return Journal(dict(self.progress), list(self.saved))


@asynccontextmanager
async def daemon(platform: Platform) -> AsyncIterator[WireAdapter[str, None]]:
    """One process's channel; leaving it without waiting is a kill."""
    async with anyio.create_task_group() as group:
        rendering = Rendering("edit", 5.0, backoff_initial=0.01, backoff_max=0.05)
        yield WireAdapter(
            Wire(platform),
            group,
            rendering,
            channel_id=ChannelId("fake"),
            parse=lambda conversation: (conversation, None),
            private=lambda _chat: True,
        )
        group.cancel_scope.cancel()


@pytest.mark.parametrize("dedupes", [True, False], ids=["repeat", "find"])
async def test_the_key_is_saved_before_the_upload_and_the_row_confirmed_after(
    dedupes: bool,
) -> None:
    platform = Platform(dedupes)
    journal = Journal()
    with anyio.fail_after(10):
        async with daemon(platform) as channel:
            await channel.deliver_clip(CHAT, CLIP, journal)
            await journal.confirmed.wait()
    assert platform.clips == {"0": CLIP.data}
    assert len(journal.saved) == 1
    assert isinstance(journal.saved[0].get("key"), str)
    assert platform.keys == {journal.saved[0]["key"]: "0"}
    assert not journal.refused.is_set()


async def test_an_upload_refused_for_good_refuses_the_row() -> None:
    platform = Platform(dedupes=True, script=["refuse"])
    journal = Journal()
    with anyio.fail_after(10):
        async with daemon(platform) as channel:
            await channel.deliver_clip(CHAT, CLIP, journal)
            await journal.refused.wait()
    assert platform.clips == {}
    assert not journal.confirmed.is_set()


@pytest.mark.parametrize("dedupes", [True, False], ids=["repeat", "find"])
@pytest.mark.parametrize(
    "kill",
    [
        pytest.param("hang", id="the upload arrived"),
        pytest.param("hang_before", id="the upload did not arrive"),
    ],
)
async def test_a_kill_mid_upload_shows_the_clip_once_after_a_restart(
    dedupes: bool, kill: str
) -> None:
    platform = Platform(dedupes, script=[kill])
    journal = Journal()
    with anyio.fail_after(10):
        async with daemon(platform) as first:
            await first.deliver_clip(CHAT, CLIP, journal)
            await platform.hung.wait()
        # killed: the row is still pending, its journal holds the upload's key
        assert not journal.confirmed.is_set()
        key = journal.progress.get("key")
        assert isinstance(key, str)
        arrived = kill == "hang"
        assert len(platform.clips) == (1 if arrived else 0)
        again = journal.again()
        async with daemon(platform) as second:
            await second.deliver_clip(CHAT, CLIP, again)
            await again.confirmed.wait()
    assert list(platform.clips.values()) == [CLIP.data]
    assert platform.keys == {key: "0"}
    if dedupes:
        assert platform.uploads == 2  # the same request, answered by the first upload
        assert platform.finds == 0
    else:
        assert platform.finds == 1  # looked for before anything was uploaded again
        assert platform.uploads == (1 if arrived else 2)
