"""A file on Matrix when a room's turn runs on a replica that is not the sync's owner:
three real daemons on Synapse with the Anthropic fake as their model. The owner
downloads the file (authenticated media) and stores it inside the message; the
replica holding the room runs the turn with it."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.cluster.anywhere import spread_once, taken
from tests.cluster.matrix_crowd import matrix_crowd
from tests.cluster.test_anywhere_approvals import ASKS, KEY, anthropic, not_the_owners
from tests.daemon_config import SCRIPTED, anthropic_provider
from tests.fakes.anthropic_api import AnthropicFake
from tests.matrix.conftest import synapse
from tests.matrix.synapse import SynapseServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(400)]
__all__ = ["anthropic", "synapse"]

NOTE = "remember: milk and purple-42"


async def test_a_file_the_sync_owner_downloaded_reaches_the_replica_running_the_room(
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
        before = len(human.bodies(room, bot))
        ran = len([c for c, _ in taken(runner) if c == room])
        note = await human.upload(f"{NOTE}\n".encode(), "text/plain", "todo.txt")
        await human.send(
            room,
            {
                "msgtype": "m.file",
                "body": "todo.txt",
                "url": note,
                "info": {"mimetype": "text/plain"},
            },
        )
        with anyio.fail_after(40):
            while len(human.bodies(room, bot)) <= before:
                await anyio.sleep(0.05)
        assert any(NOTE in json.dumps(r.body) for r in anthropic.requests), "the model saw it"
        assert len([c for c, _ in taken(runner) if c == room]) == ran + 1, "run by the runner"
        assert not any(c == room for c, _ in taken(owner))
