"""A command sent as the answer arrives (the user reads it; the send is still being
confirmed) runs once the turn is released, instead of "can't run while an answer is
being written": the people tests' `/link` after "Noted." met that under load."""

from __future__ import annotations

import anyio
import pytest

from tests.pump.harness import running_pump
from tests.pump.test_pump import SlowToConfirmAdapter
from thalos_bot.domain.events import TurnCompleted
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider

pytestmark = pytest.mark.anyio


async def test_a_command_sent_as_the_answer_arrives_runs_next_instead_of_busy() -> None:
    provider = ScriptedProvider([[Say("one")]])
    adapter = SlowToConfirmAdapter()
    async with running_pump(provider, adapter=adapter) as h:
        first = h.source.send("first")
        await adapter.wait_for(lambda: bool(adapter.terminals()))
        assert h.pump.running_turns == 1  # the user reads "one"; the turn is not released
        command = h.source.send("/agents")
        await anyio.wait_all_tasks_blocked()  # "/agents" is dispatched as far as it goes
        assert adapter.notices() == []
        adapter.confirmed.set()
        await first.wait()
        await command.wait()
    [said] = adapter.notices()
    assert "can't run while" not in said
    assert said.startswith("Agents")  # the agents listed


async def test_a_message_taken_again_while_its_own_turn_runs_runs_after_it_not_busy() -> None:
    """A shared inbox hands a message over again once its lease moved on (the owner
    stalled past it and took the connection back under a new token): the turn still
    running for it will be refused at its commit, so the message runs after it rather
    than being answered "busy" and marked done, which lost it."""
    going = anyio.Event()
    provider = ScriptedProvider([[Await(going.wait), Say("one")], [Say("again")]])
    adapter = SlowToConfirmAdapter()
    adapter.confirmed.set()
    async with running_pump(provider, adapter=adapter) as h:
        first = h.source.send("hello", ref="m1", redelivered=True)
        await anyio.wait_all_tasks_blocked()
        assert h.pump.running_turns == 1
        other = h.source.send("hello too", ref="m2", redelivered=True)
        await other.wait()
        [busy] = adapter.notices()  # another message of the conversation: busy, as ever
        again = h.source.send("hello", ref="m1", redelivered=True)
        await anyio.wait_all_tasks_blocked()
        assert adapter.notices() == [busy], "the same message waits for its turn"
        going.set()
        await first.wait()
        await again.wait()
    assert [t.text for t in adapter.terminals() if isinstance(t, TurnCompleted)] == [
        "one",
        "again",
    ]
