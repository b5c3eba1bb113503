"""Three replicas with Matrix on the real Synapse, and people each in a direct room of
their own with the bot (:class:`~tests.cluster.anywhere.Crowd`), for the any-replica
tests. Each person's client syncs all along in the background, so that what the room
shows is read without awaiting (as the crowd's cases read it)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from tests.cluster.anywhere import Crowd, sees_all
from tests.cluster.connection_daemons import ANSWER, replica_config, start
from tests.cluster.processes import Replica
from tests.matrix.accounts import Account, register, unique
from tests.matrix.e2ee_human import EncryptingHuman
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix import PICKLE_KEY_ENV, TOKEN_ENV

PICKLE_KEY = "a-pickle-key-for-the-cluster-test"


@dataclass
class MatrixCrowd:
    crowd: Crowd
    bot: Account
    rooms: dict[str, str]
    """Person → their direct room with the bot."""
    sealed: str | None
    """The person whose room is encrypted (None: every room is plain)."""
    humans: dict[str, Human]


def matrix_keys(homeserver: str, bot: str, people: list[str], *, encryption: bool) -> str:
    """``[channels.matrix]``'s keys (after its table's head)."""
    return f"""
homeserver = "{homeserver}"
user_id = "{bot}"
allowed_users = {json.dumps(people)}
sync_timeout = 2
request_timeout = 5
room_min_interval = "0.05s"
backoff_initial = "0.1s"
backoff_max = "1s"
drain_timeout = 5
encryption = {"true" if encryption else "false"}
"""


@asynccontextmanager
async def matrix_crowd(
    synapse: SynapseServer,
    url: str,
    tmp_path: Path,
    *,
    people: int = 6,
    sealed: bool = False,
    configured: Callable[[str], str] = lambda config: config,
    env: dict[str, str] | None = None,
) -> AsyncIterator[MatrixCrowd]:
    """``people`` people, each in a direct room; with ``sealed``, encryption is on and
    the first person's room is encrypted (their client encrypts and decrypts).
    ``configured``: the replicas' bot.toml made from the crowd's; ``env``: more
    variables for them."""
    bot = await register(synapse, unique("bot"))
    accounts = [await register(synapse, unique(f"person{n}")) for n in range(people)]
    names = [a.user_id for a in accounts]
    config = configured(
        replica_config(url, "matrix")
        + matrix_keys(synapse.base_url, bot.user_id, names, encryption=sealed)
    )
    keys = {TOKEN_ENV: bot.access_token} | ({PICKLE_KEY_ENV: PICKLE_KEY} if sealed else {})
    replicas: list[Replica] = []
    async with AsyncExitStack() as stack:
        humans: dict[str, Human] = {}
        for index, account in enumerate(accounts):
            if sealed and index == 0:
                encrypting = await stack.enter_async_context(EncryptingHuman(synapse, account))
                await encrypting.upload_keys()
                humans[account.user_id] = encrypting
            else:
                humans[account.user_id] = await stack.enter_async_context(Human(synapse, account))
        try:
            for index in range(3):
                replicas.append(await start(tmp_path, config, keys | (env or {}), index))  # noqa: PERF401
            with anyio.fail_after(30):  # each knows the others and the owner (a heartbeat)
                while not all(sees_all(replica, 3) for replica in replicas):
                    await anyio.sleep(0.05)
            rooms = {
                name: await human.direct_chat(bot.user_id, encrypted=sealed and name == names[0])
                for name, human in humans.items()
            }
            for name, human in humans.items():
                await human.until(_joined(rooms[name], bot.user_id))
            async with anyio.create_task_group() as group:
                for human in humans.values():
                    group.start_soon(_follow, human)

                def say(person: str, text: str) -> None:
                    human, room = humans[person], rooms[person]
                    if isinstance(human, EncryptingHuman):
                        group.start_soon(human.say_encrypted, room, bot.user_id, text)
                    else:
                        group.start_soon(human.say, room, text)

                def answers(person: str, text: str) -> int:
                    return humans[person].bodies(rooms[person], bot.user_id).count(ANSWER + text)

                crowd = Crowd(url, "matrix", names, replicas, say, answers, rooms.__getitem__)
                yield MatrixCrowd(crowd, bot, rooms, names[0] if sealed else None, humans)
                group.cancel_scope.cancel()
        finally:
            for replica in replicas:
                replica.close()


def _joined(room: str, user: str) -> Callable[[Human], bool]:
    return lambda human: human.joined(room, user)


async def _follow(human: Human) -> None:
    """Sync all along (each long poll answers early on news)."""
    while True:
        await human.sync_once()
