"""A command sent as the answer arrives (the user reads it; the send is still being
confirmed) runs once the turn is released, instead of "can't run while an answer is
being written": the people tests' `/link` after "Noted." met that under load."""

from __future__ import annotations

import anyio
import pytest

from tests.pump.harness import running_pump
from tests.pump.test_pump import SlowToConfirmAdapter
from thalos_bot.providers.scripted import Say, ScriptedProvider

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
