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
from tests.matrix.e2ee_human import EncryptingHuman
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix import PICKLE_KEY_ENV, TOKEN_ENV

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


async def test_encrypted_direct_chat_goes_on_after_a_kill_with_the_same_device_keys(
    synapse: SynapseServer, postgres_url: str, tmp_path: Path
) -> None:
    """``encryption = true`` on two replicas: the device's keys live in the shared
    store, so after ``kill -9`` of the owner the standby reads the user's messages with
    the same Olm and Megolm sessions, answers with the same outbound session, and the
    homeserver lists the same identity keys: nothing the user's client cannot decrypt."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    config = matrix_config(synapse.base_url, bot.user_id, alice.user_id, postgres_url)
    env = {TOKEN_ENV: bot.access_token, PICKLE_KEY_ENV: "a-pickle-key-for-the-cluster-test"}
    replicas: list[Replica] = []
    async with EncryptingHuman(synapse, alice) as human:
        await human.upload_keys()
        try:
            for index in range(2):
                replicas.append(await start(tmp_path, config + "encryption = true\n", env, index))  # noqa: PERF401
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.joined(room, bot.user_id))

            async def answered(text: str) -> None:
                await human.say_encrypted(room, bot.user_id, text)
                with anyio.fail_after(4 * LEASE + 30):
                    await human.until(lambda h: ANSWER + text in h.bodies(room, bot.user_id))

            await answered("one")
            device = await human.bot_device(bot.user_id)
            pid = await anyio.to_thread.run_sync(owner_pid, postgres_url, "matrix")
            (first,) = [r for r in replicas if r.pid == pid]
            second = replicas[1 - replicas.index(first)]
            first.kill()
            await answered("two")  # Alice's Megolm session from before: no new key sent
            human.rotate(room)
            await answered("three")  # a new room key, over the Olm session from before
            assert await human.bot_device(bot.user_id) == device
            sent = [
                e
                for e in human.events.get(room, [])
                if e["sender"] == bot.user_id and "state_key" not in e
            ]
        finally:
            for replica in replicas:
                replica.close()
    assert sent, "the bot said something"
    assert all(e.get("encrypted") is True for e in sent), "each decrypts on Alice's side"
    bodies = human.bodies(room, bot.user_id)
    assert [bodies.count(ANSWER + t) for t in ("one", "two", "three")] == [1, 1, 1], bodies
    assert count(second, "connection_opened") >= 1
    for event in (
        "matrix_device_keys_uploaded",  # a new identity for the same device
        "matrix_event_undecryptable",
        "matrix_to_device_undecryptable",
        "matrix_event_failed",
        "matrix_cross_signing_unavailable",
    ):
        assert count(second, event) == 0, event
