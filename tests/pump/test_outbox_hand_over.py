"""With an outbox, the pump leaves a completed turn's final answer to it: the row the
turn committed is handed over (once), and a turn that left no row is delivered as before."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.pump.harness import running_pump
from thalos_bot.channels.ports import ChannelAdapter
from thalos_bot.domain.events import TurnCompleted
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.protocol import OutboxAddress

pytestmark = pytest.mark.anyio


@dataclass
class FakeOutbox:
    store: MemorySessionStore
    handed: list[tuple[OutboxAddress, str]] = field(default_factory=list)

    def address(self, channel_id: ChannelId, conversation_id: ConversationId) -> OutboxAddress:
        return OutboxAddress(channel_id, conversation_id, f"out-{len(self.handed)}")

    async def hand_over(
        self, address: OutboxAddress, terminal: TurnCompleted, fallback: ChannelAdapter
    ) -> bool:
        if not any(entry.address == address for entry in self.store.outbox):
            return False
        self.handed.append((address, terminal.text))
        return True


async def test_the_final_goes_through_the_row_the_turn_committed() -> None:
    provider = ScriptedProvider([[Say("Hi", " there.")], []])
    async with running_pump(provider) as h:
        assert isinstance(h.runtime.store, MemorySessionStore)
        outbox = FakeOutbox(h.runtime.store)
        h.pump.outbox = outbox
        await h.source.send("hello").wait()
        await h.source.send("say nothing").wait()
    ((address, text),) = outbox.handed
    assert (address.conversation_id, text) == ("c1", "Hi there.")
    assert [e.text for e in h.runtime.store.outbox] == ["Hi there."]
    # The adapter saw the stream, but the final only of the turn that left no row.
    (terminal,) = h.adapter.terminals()
    assert isinstance(terminal, TurnCompleted)
    assert terminal.text == ""
