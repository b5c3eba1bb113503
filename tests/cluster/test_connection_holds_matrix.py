"""A 429 one replica on Matrix met is obeyed by the next one, in every room: real
daemons on one PostgreSQL store, against the real Synapse behind a proxy that answers a
send with Synapse's own ``M_LIMIT_EXCEEDED`` (8 s, longer than a test can make Synapse
say, and than the next replica takes to take up what the killed one left: about two
leases) and counts any send made before that wait ran out.

The homeserver limits the account, not a room: the replica that met it (any replica
runs a room's turns) is killed during the wait, and the next one must send nothing, to
that room or to another person's, until it ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.to_thread
import psycopg
import pytest

from tests.cluster.connection_daemons import ANSWER, LEASE, start, took_up_the_dead_ones
from tests.cluster.processes import Replica
from tests.cluster.stall import probe_text
from tests.cluster.test_connection_owner_matrix import matrix_config
from tests.matrix.accounts import register, unique
from tests.matrix.conftest import synapse
from tests.matrix.human import Human
from tests.matrix.proxy import Proxy, fronting, sends_of
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix import TOKEN_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(300)]
__all__ = ["synapse"]


@pytest.fixture
async def proxy(synapse: SynapseServer) -> AsyncIterator[Proxy]:
    async with fronting(synapse.base_url) as fronted:
        yield fronted


async def answered(human: Human, room: str, bot: str, text: str) -> None:
    await human.say(room, text)
    with anyio.fail_after(60):
        await human.until(lambda h: ANSWER + text in h.bodies(room, bot))


def held_everywhere(url: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT 1 FROM connection_holds WHERE channel_id = 'matrix'"
            " AND conversation = '*' AND retry_until > now()"
        ).fetchone()
    return row is not None


async def test_an_account_wide_429_met_by_a_killed_replica_holds_every_room_for_the_next(
    synapse: SynapseServer, proxy: Proxy, postgres_url: str, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    bob = await register(synapse, unique("bob"))
    config = matrix_config(proxy.base_url, bot.user_id, alice.user_id, postgres_url)
    config = config.replace(
        f'allowed_users = ["{alice.user_id}"]',
        f'allowed_users = ["{alice.user_id}", "{bob.user_id}"]',
    )
    env = {TOKEN_ENV: bot.access_token}
    replicas: list[Replica] = []
    async with Human(synapse, alice) as her, Human(synapse, bob) as him:
        try:
            hers = await her.direct_chat(bot.user_id)
            his = await him.direct_chat(bot.user_id)
            for index in range(2):
                replicas.append(await start(tmp_path, config, env, index))  # noqa: PERF401
            await her.until(lambda h: h.joined(hers, bot.user_id))
            await him.until(lambda h: h.joined(his, bot.user_id))
            await her.say(hers, "before")
            with anyio.fail_after(60):
                await her.until(lambda h: ANSWER + "before" in h.bodies(hers, bot.user_id))

            proxy.limit_ms = 8_000
            proxy.limit.append(sends_of("held back"))
            await her.say(hers, "held back")
            with anyio.fail_after(60):
                while not await anyio.to_thread.run_sync(held_everywhere, postgres_url):
                    await anyio.sleep(0.05)
            with anyio.fail_after(10):
                while not any(r.logged("connection_hold_shared") for r in replicas):
                    await anyio.sleep(0.05)
            (first,) = [r for r in replicas if r.logged("connection_hold_shared")]
            second = replicas[1 - replicas.index(first)]
            first.kill()  # in the middle of the wait
            await him.say(his, "meanwhile")  # another room: the account's wait holds it too
            # What the killed one left unsent is taken up while the wait still runs: else
            # the next would have nothing left to obey, and the proxy nothing to catch.
            await took_up_the_dead_ones(second)
            assert await anyio.to_thread.run_sync(held_everywhere, postgres_url), (
                "taken up after the wait"
            )

            with anyio.fail_after(4 * LEASE + 40):
                await her.until(lambda h: ANSWER + "held back" in h.bodies(hers, bot.user_id))
                await him.until(lambda h: ANSWER + "meanwhile" in h.bodies(his, bot.user_id))
            # A probe answered in each room (tests/cluster/stall.py): a second answer
            # of what was said there before shows by then.
            await answered(her, hers, bot.user_id, probe_text())
            await answered(him, his, bot.user_id, probe_text())
            assert her.bodies(hers, bot.user_id).count(ANSWER + "held back") == 1
            assert him.bodies(his, bot.user_id).count(ANSWER + "meanwhile") == 1
            assert proxy.limited == 1
            assert proxy.violations == 0, "a send went out before the account's wait ran out"
            assert first.logged("connection_hold_shared")
            assert second.logged("connection_hold_obeyed")
        finally:
            for replica in replicas:
                replica.close()
