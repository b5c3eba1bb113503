"""One owner per platform connection, on Matrix: two real daemons on one PostgreSQL
store with Matrix enabled on both, against the real Synapse. Only the owner of the
connection lease runs the sync loop: each message answered once; after ``kill -9`` of
the owner the standby takes the sync over from the sync token the owner kept in the
shared store, so a message said in the takeover gap is answered once, and what was
answered before is not read again. SIGSTOP of the owner mid-answer: the standby answers,
and the old owner, continued, finds its token fenced."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.cluster.connection_daemons import ANSWER, LEASE, owner_pid, replica_config, start
from tests.cluster.processes import Replica
from tests.cluster.stall import Talk, count, stall_owner_mid_answer
from tests.matrix.accounts import register, unique
from tests.matrix.conftest import synapse
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix import TOKEN_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(300)]
__all__ = ["synapse"]


def matrix_config(homeserver: str, bot: str, user: str, pg_url: str) -> str:
    return (
        replica_config(pg_url, "matrix")
        + f"""
homeserver = "{homeserver}"
user_id = "{bot}"
allowed_users = ["{user}"]
sync_timeout = 2
request_timeout = 5
room_min_interval = "0.05s"
backoff_initial = "0.1s"
backoff_max = "1s"
"""
    )


async def test_each_matrix_message_answered_once_across_a_stall_and_a_kill(
    synapse: SynapseServer, postgres_url: str, tmp_path: Path
) -> None:
    """One set of daemons for both: SIGSTOP of the owner mid-answer first
    (tests/cluster/stall.py), then ``kill -9`` of whichever owns the sync then."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    config = matrix_config(synapse.base_url, bot.user_id, alice.user_id, postgres_url)
    env = {TOKEN_ENV: bot.access_token}
    replicas: list[Replica] = []
    async with Human(synapse, alice) as human:
        try:
            room = await human.direct_chat(bot.user_id)
            for index in range(2):
                replicas.append(await start(tmp_path, config, env, index))  # noqa: PERF401
            await human.until(lambda h: h.joined(room, bot.user_id))

            async def say(text: str) -> None:
                await human.say(room, text)

            talk = Talk(
                postgres_url,
                "matrix",
                say,
                lambda text: human.bodies(room, bot.user_id).count(ANSWER + text),
                human.sync_once,
            )
            await talk.answered_once("one")
            await stall_owner_mid_answer(talk, replicas)

            pid = await anyio.to_thread.run_sync(owner_pid, postgres_url, "matrix")
            (first,) = [r for r in replicas if r.pid == pid]
            second = replicas[1 - replicas.index(first)]
            opened, seen = count(second, "connection_opened"), seen_before(second)
            first.kill()
            await human.say(room, "in the gap")  # before any replica syncs again
            with anyio.fail_after(4 * LEASE + 30):
                await human.until(lambda h: ANSWER + "in the gap" in h.bodies(room, bot.user_id))
            await talk.answered_once("two")
            bodies = human.bodies(room, bot.user_id)
            assert bodies.count(ANSWER + "one") == 1, bodies
            assert bodies.count(ANSWER + "in the gap") == 1, bodies
            # Resumed from the shared token: nothing answered before was read again.
            assert count(second, "connection_opened") > opened
            assert seen_before(second) == seen
        finally:
            for replica in replicas:
                replica.close()


def seen_before(replica: Replica) -> int:
    return count(replica, "connection_message_seen_before")
