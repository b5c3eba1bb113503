"""A kept clip on Discord (a ``repeat`` wire: the nonce is the check): a daemon that died
after noting the upload's key in the clip's row, whether the upload arrived or not, is
followed by one that uploads it again under the same nonce, and the DM shows one voice
message."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio
import pytest

from tests.discord.harness import World, running_bot
from tests.fakes.discord_api import DiscordFake
from tests.media.transcribing import local_speaking
from thalos_bot.channels.final import ConfirmingClips
from thalos_bot.domain.events import VoiceClip
from thalos_bot.domain.ids import ConversationId, SessionId

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

VOICE_FLAG = 1 << 13


@dataclass
class Journal:
    """A clip's outbox row as the channel sees it."""

    progress: Mapping[str, object] = field(default_factory=dict)
    confirmed: anyio.Event = field(default_factory=anyio.Event)
    refused: bool = False

    async def save(self, progress: Mapping[str, object]) -> None:
        self.progress = dict(progress)

    async def confirm(self) -> None:
        self.confirmed.set()

    async def refuse(self) -> None:
        self.refused = True


async def _clip() -> VoiceClip:
    (clip,) = await local_speaking().clips(SessionId("s"), "Hello there.", turn="out-1")
    return clip


def _voices(fake: DiscordFake, dm: int) -> list[dict[str, object]]:
    return [m for m in fake.messages(dm) if int(str(m.get("flags", 0))) & VOICE_FLAG]


@pytest.mark.parametrize("arrived", [True, False], ids=["arrived-then-died", "died-before"])
async def test_a_clip_in_doubt_is_uploaded_again_under_its_nonce_and_shown_once(
    fake: DiscordFake, world: World, arrived: bool
) -> None:
    clip = await _clip()
    conversation = ConversationId(f"dm:{world.owner}")
    dm = fake.dm_channel_id(world.owner)
    key = "0123456789abcdef"
    if arrived:
        # The first process noted the key, uploaded under it, and died before it heard
        # back (its row never confirmed).
        first = Journal()
        async with running_bot(fake, world) as bot:
            adapter = bot.pair.adapter
            assert isinstance(adapter, ConfirmingClips)
            await adapter.deliver_clip(conversation, clip, first)
            with anyio.fail_after(30):
                await first.confirmed.wait()
        key = str(first.progress["key"])
        assert len(_voices(fake, dm)) == 1
    journal = Journal({"key": key})
    async with running_bot(fake, world) as bot:
        adapter = bot.pair.adapter
        assert isinstance(adapter, ConfirmingClips)
        await adapter.deliver_clip(conversation, clip, journal)
        with anyio.fail_after(30):
            await journal.confirmed.wait()
    (voice,) = _voices(fake, dm)
    assert voice["nonce"] == key
    assert fake.nonce_hits == ([key] if arrived else [])
    assert not journal.refused
