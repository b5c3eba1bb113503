"""Tool approvals on Matrix when a room's turn runs on a replica that is not the sync's
owner: three real daemons on Synapse with the Anthropic fake as their model. The
question is asked by the replica running the turn; the person's reaction, or reply,
reaches the sync's owner, which relays it by the question's event id to the replica
that asked (a ``NOTIFY``)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.cluster.anywhere import SETTLE, spread_once
from tests.cluster.matrix_crowd import matrix_crowd
from tests.cluster.test_anywhere_approvals import (
    ASKS,
    KEY,
    REMEMBER,
    TOOL_SAID,
    anthropic,
    not_the_owners,
)
from tests.daemon_config import SCRIPTED, anthropic_provider
from tests.fakes.anthropic_api import AnthropicFake
from tests.matrix.conftest import synapse
from tests.matrix.human import Human, Shown
from tests.matrix.synapse import SynapseServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(400)]
__all__ = ["anthropic", "synapse"]

ANSWER_TO_YES = "You said: yes"
"""What the model would say had the reply "yes" been taken as a message."""


async def question(human: Human, room: str, bot: str, count: int) -> Shown:
    """The ``count``-th question the bot asked in the room, once it shows."""
    with anyio.fail_after(40):
        while True:
            asked = [m for m in human.shown(room, bot) if m.body.startswith("🔐 Allow")]
            if len(asked) >= count:
                return asked[count - 1]
            await anyio.sleep(0.05)


async def test_a_reaction_and_a_reply_heard_by_the_sync_owner_decide_another_replicas_question(
    synapse: SynapseServer, anthropic: AnthropicFake, postgres_url: str, tmp_path: Path
) -> None:
    def configured(config: str) -> str:
        return config.replace(SCRIPTED, anthropic_provider(anthropic.base_url)) + ASKS

    async with matrix_crowd(
        synapse, postgres_url, tmp_path, configured=configured, env=KEY
    ) as matrix:
        crowd, bot = matrix.crowd, matrix.bot.user_id
        owner = await crowd.owner()
        await spread_once(crowd)
        person, runner = await not_the_owners(crowd, owner)
        human, room = matrix.humans[person], matrix.rooms[person]

        def tools_said() -> list[str]:
            return [b for b in human.bodies(room, bot) if b.startswith(TOOL_SAID)]

        async def decided(asked: Shown, said: int) -> None:
            with anyio.fail_after(40):
                while not (
                    any(
                        m.event_id == asked.event_id and "Approved by" in m.body
                        for m in human.shown(room, bot)
                    )
                    and len(tools_said()) >= said
                ):
                    await anyio.sleep(0.05)

        crowd.say(person, REMEMBER + "green is my colour")
        first = await question(human, room, bot, 1)
        await human.react(room, first.event_id, "✅")
        await decided(first, 1)
        crowd.say(person, REMEMBER + "blue too")
        second = await question(human, room, bot, 2)
        await human.say(room, "yes", reply_to=second.event_id)
        await decided(second, 2)
        await anyio.sleep(SETTLE)
        said = tools_said()
        assert len(said) == 2, said
        assert all(s.startswith(TOOL_SAID + "Remembered") for s in said), said  # it ran
        assert ANSWER_TO_YES not in human.bodies(room, bot), "the reply was no message"
        assert owner.logged("matrix_answer_relayed")
        assert runner is not owner
