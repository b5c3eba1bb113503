"""With finals kept, a completed turn's final answer goes through the row the turn
committed: the pump asks the runtime to keep it and delivers the turn's events as always;
the adapter it is given (wrapped at assembly) hands the row over to the outbox, once. A
turn that left no row is delivered as before, and so is a final whose hand-over fails."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.pump.harness import running_pump
from thalos_bot.channels.ports import ChannelAdapter
from thalos_bot.domain.events import TurnCompleted, VoiceClip
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot.service.finals import FinalsThroughOutbox
from thalos_bot.storage.memory_sessions import MemorySessionStore

pytestmark = pytest.mark.anyio


@dataclass
class FakeOutbox:
    store: MemorySessionStore | None = None
    handed: list[tuple[str, str]] = field(default_factory=list)
    broken: bool = False

    async def hand_over(self, key: str, terminal: TurnCompleted, fallback: ChannelAdapter) -> bool:
        if self.broken:
            raise RuntimeError("the store is down")
        assert self.store is not None
        if not any(entry.address.key == key for entry in self.store.outbox):
            return False
        self.handed.append((key, terminal.text))
        return True

    async def keep_clip(
        self,
        channel_id: ChannelId,
        conversation_id: ConversationId,
        clip: VoiceClip,
        fallback: ChannelAdapter,
    ) -> bool:
        return False


async def test_the_final_goes_through_the_row_the_turn_committed() -> None:
    outbox = FakeOutbox()
    provider = ScriptedProvider([[Say("Hi", " there.")], []])
    wrap = lambda adapter: FinalsThroughOutbox(adapter, outbox)  # noqa: E731
    async with running_pump(provider, wrap=wrap) as h:
        assert isinstance(h.runtime.store, MemorySessionStore)
        outbox.store = h.runtime.store
        await h.source.send("hello").wait()
        await h.source.send("say nothing").wait()
    ((key, text),) = outbox.handed
    (entry,) = h.runtime.store.outbox
    assert (entry.address.key, entry.address.conversation_id, entry.text) == (key, "c1", text)
    assert text == "Hi there."
    # The adapter saw the stream, but the final only of the turn that left no row.
    (terminal,) = h.adapter.terminals()
    assert isinstance(terminal, TurnCompleted)
    assert terminal.text == ""


async def test_a_failed_hand_over_still_shows_the_final() -> None:
    outbox = FakeOutbox(broken=True)
    provider = ScriptedProvider([[Say("Still here.")]])
    wrap = lambda adapter: FinalsThroughOutbox(adapter, outbox)  # noqa: E731
    async with running_pump(provider, wrap=wrap) as h:
        await h.source.send("hello").wait()
    assert h.adapter.final_texts() == ["Still here."]
    (terminal,) = h.adapter.terminals()
    assert isinstance(terminal, TurnCompleted)
    assert terminal.delivery is not None, "the row was written with the turn"


async def test_without_kept_finals_no_row_is_written() -> None:
    provider = ScriptedProvider([[Say("Plain.")]])
    async with running_pump(provider) as h:
        await h.source.send("hello").wait()
    assert isinstance(h.runtime.store, MemorySessionStore)
    assert h.runtime.store.outbox == []
    assert h.adapter.final_texts() == ["Plain."]
