"""Matrix's turns run by any replica: three real daemons on one PostgreSQL store with
Matrix, against the real Synapse. One replica holds the sync loop and only stores what
it receives; each plain room's turns run on the replica holding its lease, with a
client-server API client of its own (the same token). An encrypted room's turns run
on the sync's owner only, which alone holds the device's keys, and after its kill on
the next owner. Which replica ran each turn is read from their logs
(``connection_turn_taken``; see tests/cluster/anywhere.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.cluster.anywhere import (
    SETTLE,
    kill_a_runner_mid_turn,
    kill_the_owner,
    runners,
    spread_once,
)
from tests.cluster.connection_daemons import LEASE, owner_pid
from tests.cluster.matrix_crowd import matrix_crowd
from tests.matrix.conftest import synapse
from tests.matrix.synapse import SynapseServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(400)]
__all__ = ["synapse"]


async def test_plain_rooms_are_answered_by_several_replicas_each_once(
    synapse: SynapseServer, postgres_url: str, tmp_path: Path
) -> None:
    async with matrix_crowd(synapse, postgres_url, tmp_path) as matrix:
        crowd = matrix.crowd
        owner = await crowd.owner()
        await spread_once(crowd)
        others = [r for r in crowd.replicas if r is not owner]
        assert not any(r.logged("connection_opened") for r in others)


async def test_a_replica_killed_mid_turn_that_is_not_the_sync_owner(
    synapse: SynapseServer, postgres_url: str, tmp_path: Path
) -> None:
    async with matrix_crowd(synapse, postgres_url, tmp_path) as matrix:
        await kill_a_runner_mid_turn(matrix.crowd, await matrix.crowd.owner())


async def test_the_sync_owner_killed_each_message_still_once(
    synapse: SynapseServer, postgres_url: str, tmp_path: Path
) -> None:
    async with matrix_crowd(synapse, postgres_url, tmp_path) as matrix:
        await kill_the_owner(matrix.crowd, await matrix.crowd.owner())


async def test_an_encrypted_room_is_run_by_the_sync_owner_only_and_after_its_kill_by_the_next(
    synapse: SynapseServer, postgres_url: str, tmp_path: Path
) -> None:
    """``encryption = true``: the plain rooms still spread; the encrypted room's every
    turn is taken by the replica holding the sync, each answer encrypted and shown once."""
    async with matrix_crowd(synapse, postgres_url, tmp_path, sealed=True) as matrix:
        crowd, sealed = matrix.crowd, matrix.sealed
        assert sealed is not None
        room = matrix.rooms[sealed]
        owner = await crowd.owner()
        await crowd.everyone_says("first")
        await crowd.everyone_says("second")
        ran = runners(crowd.replicas)
        assert sum(1 for conversations in ran.values() if conversations) >= 2, ran
        assert [pid for pid, rooms in ran.items() if room in rooms] == [owner.pid], ran
        owner.kill()
        survivors = [r for r in crowd.replicas if r is not owner]
        with anyio.fail_after(4 * LEASE + 40):
            while True:
                pid = await anyio.to_thread.run_sync(owner_pid, postgres_url, "matrix")
                opened = [r for r in survivors if r.pid == pid and r.logged("connection_opened")]
                if opened:
                    successor = opened[0]
                    break
                await anyio.sleep(0.05)
        crowd.say(sealed, "after the kill")
        await crowd.shown(sealed, "after the kill", timeout=4 * LEASE + 40)
        await anyio.sleep(SETTLE)
        for text in ("first", "second"):
            assert crowd.answers(sealed, f"{text} from {sealed}") == 1
        assert crowd.answers(sealed, "after the kill") == 1
        after = runners(survivors)
        assert [pid for pid, rooms in after.items() if room in rooms] == [successor.pid], after
        for replica in crowd.replicas:
            assert not replica.logged("matrix_event_undecryptable"), replica.pid
            assert not replica.logged("matrix_sealed_room_elsewhere"), replica.pid
        human = matrix.humans[sealed]
        sent = [
            e
            for e in human.events.get(room, [])
            if e["sender"] == matrix.bot.user_id and "state_key" not in e
        ]
        assert sent, "the bot said something"
        assert all(e.get("encrypted") is True for e in sent), "each decrypts on their side"
