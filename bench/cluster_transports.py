"""Replicas, per transport: failover of a platform connection's owner killed mid-answer.

    python bench/cluster_transports.py [--kills 5] [--only discord,slack,matrix,signal]

Starts a throwaway PostgreSQL, then per transport (the Discord fake, the Slack fake,
a real Synapse, the signal-cli fake) three ``thalos-bot run`` replicas with that channel
enabled on each (``[storage] connection_lease`` 2 s, the scripted model echoing a word each 0.03 s).
Each of ``--kills`` runs sends a message, waits until the owner of the connection took
it from the shared inbox (its turn under way), kills that owner with SIGKILL, and
measures until another replica has the connection open (``takeover``) and until the
message's answer shows (``answered``); a replacement replica is started after each run.
Printed per transport: takeover and answered (median, min, max), then over all runs
the turns kept twice (the message twice in the sessions' history), the finals shown
twice and the finals never shown.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/: its telegram.py would shadow the library

from tests.cluster.connection_daemons import (  # noqa: E402
    ANSWER,
    discord_config,
    owner_pid,
    replica_config,
    start,
)
from tests.cluster.processes import Replica  # noqa: E402
from tests.cluster.stall import WORDS, pause, taken  # noqa: E402
from tests.storage.postgres import start_server  # noqa: E402


@dataclass
class Transport:
    """One platform as the bench drives it."""

    name: str
    config: str
    env: dict[str, str]
    say: Callable[[str], Awaitable[None]]
    answers: Callable[[str], int]
    joined: Callable[[], bool] = lambda: True
    """The bot can hear the person (Matrix: it joined the room it was invited to)."""
    look: Callable[[], Awaitable[None]] = pause
    """Before looking again at what the person was shown (Matrix: the person's /sync)."""


@dataclass
class Run:
    takeover: list[float] = field(default_factory=list)
    answered: list[float] = field(default_factory=list)
    kept_twice: int = 0
    shown_twice: int = 0
    lost: int = 0


def summary(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: none"
    return (
        f"{name}: median {statistics.median(values):.2f} s"
        f" (min {min(values):.2f}, max {max(values):.2f}, {len(values)} runs)"
    )


def kept(url: str, marker: str) -> int:
    """How many times the message starting with ``marker`` is in the sessions' history."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM session_messages WHERE role = 'user' AND content::text LIKE %s",
            ("%" + marker + " w0%",),
        ).fetchone()
    return 0 if row is None else int(row[0])


async def until(found: Callable[[], bool], look: Callable[[], Awaitable[None]] = pause) -> None:
    while True:
        if found():
            return
        await look()


def opened(replica: Replica) -> int:
    return replica.log.read_text(encoding="utf-8", errors="replace").count(
        '"event": "connection_opened"'
    )


async def owner(url: str, channel: str, replicas: list[Replica]) -> Replica:
    with anyio.fail_after(60):
        while True:
            pid = await anyio.to_thread.run_sync(owner_pid, url, channel)
            found = [r for r in replicas if r.pid == pid and opened(r)]
            if found:
                return found[0]
            await anyio.sleep(0.05)


async def one(url: str, transport: Transport, replicas: list[Replica], k: int, run: Run) -> Replica:
    """One kill of the owner mid-answer; returns the replica killed."""
    first = await owner(url, transport.name, replicas)
    seen = {r.pid: opened(r) for r in replicas}
    marker = f"{transport.name}-kill-{k}"
    text = f"{marker} {WORDS}"
    await transport.say(text)
    with anyio.fail_after(60):
        await until(lambda: taken(url, transport.name, marker) is not None)
    began = time.monotonic()
    first.kill()
    with anyio.fail_after(120):
        await until(lambda: any(r is not first and opened(r) > seen[r.pid] for r in replicas))
    run.takeover.append(time.monotonic() - began)
    with anyio.move_on_after(60):
        await until(lambda: transport.answers(text) >= 1, transport.look)
    if transport.answers(text) >= 1:
        run.answered.append(time.monotonic() - began)
    with anyio.move_on_after(2.0):
        await until(lambda: False, transport.look)
    shown = transport.answers(text)
    run.lost += shown == 0
    run.shown_twice += shown > 1
    run.kept_twice += await anyio.to_thread.run_sync(kept, url, marker) > 1
    return first


async def kills(url: str, tmp: Path, transport: Transport, count: int) -> Run:
    run = Run()
    replicas: list[Replica] = []
    try:
        for index in range(3):
            replicas.append(  # noqa: PERF401 - started one by one, closed if one fails
                await start(tmp, transport.config, transport.env, index)
            )
        with anyio.fail_after(60):
            await until(transport.joined, transport.look)
        await transport.say("warm up")
        with anyio.fail_after(60):
            await until(lambda: transport.answers("warm up") >= 1, transport.look)
        for k in range(count):
            killed = await one(url, transport, replicas, k, run)
            replicas.remove(killed)
            replicas.append(await start(tmp, transport.config, transport.env, 3 + k))
    finally:
        for replica in replicas:
            replica.close()
    return run


@asynccontextmanager
async def discord(url: str) -> AsyncIterator[Transport]:
    from tests.fakes.discord_api import DiscordFake
    from thalos_bot_discord import TOKEN_ENV

    with DiscordFake() as fake:
        user = fake.add_user("owner")
        dm = fake.dm_channel_id(user)

        async def say(text: str) -> None:
            fake.say_dm(user, text)

        yield Transport(
            "discord",
            discord_config(fake, url, user),
            {TOKEN_ENV: fake.token},
            say,
            lambda text: fake.texts(dm).count(ANSWER + text),
        )


@asynccontextmanager
async def slack(url: str) -> AsyncIterator[Transport]:
    from tests.fakes.slack_api import SlackFake
    from tests.slack.harness import SCALE, USER, tokens
    from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
    from thalos_bot_slack.plugin import TIER_SCALE_ENV

    bot, app = tokens()
    with SlackFake(bot, app, scale=SCALE) as fake:
        config = replica_config(url, "slack") + (
            f'allowed_users = ["{USER}"]\nbase_url = "{fake.base_url}"\n'
            "ping_interval = 0.3\nrequest_timeout = 3\ndrain_timeout = 5\n"
        )
        dm = fake.dm(USER)

        async def say(text: str) -> None:
            fake.say(USER, text)

        yield Transport(
            "slack",
            config,
            {BOT_TOKEN_ENV: bot, APP_TOKEN_ENV: app, TIER_SCALE_ENV: str(SCALE)},
            say,
            lambda text: fake.texts(dm).count(ANSWER + text),
        )


@asynccontextmanager
async def matrix(url: str, tmp: Path) -> AsyncIterator[Transport]:
    from tests.matrix.accounts import register, unique
    from tests.matrix.human import Human
    from tests.matrix.synapse import SynapseServer
    from thalos_bot_matrix import TOKEN_ENV

    server = SynapseServer(tmp / "synapse")
    (tmp / "synapse").mkdir()
    server.start()
    try:
        bot = await register(server, unique("bot"))
        alice = await register(server, unique("alice"))
        config = replica_config(url, "matrix") + (
            f'homeserver = "{server.base_url}"\nuser_id = "{bot.user_id}"\n'
            f'allowed_users = ["{alice.user_id}"]\nsync_timeout = 2\nrequest_timeout = 5\n'
            'room_min_interval = "0.05s"\nbackoff_initial = "0.1s"\nbackoff_max = "1s"\n'
        )
        async with Human(server, alice) as human:
            room = await human.direct_chat(bot.user_id)

            async def say(text: str) -> None:
                await human.say(room, text)

            yield Transport(
                "matrix",
                config,
                {TOKEN_ENV: bot.access_token},
                say,
                lambda text: human.bodies(room, bot.user_id).count(ANSWER + text),
                lambda: human.joined(room, bot.user_id),
                human.sync_once,
            )
    finally:
        server.stop()


@asynccontextmanager
async def signal(url: str) -> AsyncIterator[Transport]:
    from tests.cluster.test_connection_owner_signal import answers, signal_config
    from tests.fakes.signal_cli import SignalCliFake
    from thalos_bot_signal import ACCOUNT_ENV

    with SignalCliFake() as fake:

        async def say(text: str) -> None:
            fake.say(text, fake.world.user)

        yield Transport(
            "signal",
            signal_config(fake, url),
            {ACCOUNT_ENV: fake.world.bot.number},
            say,
            lambda text: answers(fake, text),
        )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--only", default="discord,slack,matrix,signal")
    args = parser.parse_args()
    server = start_server()
    try:
        server.create_database("transports")  # one per server; the channels differ
        url = server.url("transports")
        for name in args.only.split(","):
            with tempfile.TemporaryDirectory() as folder:
                tmp = Path(folder)
                async with AsyncExitStack() as stack:
                    if name == "discord":
                        transport = await stack.enter_async_context(discord(url))
                    elif name == "slack":
                        transport = await stack.enter_async_context(slack(url))
                    elif name == "signal":
                        transport = await stack.enter_async_context(signal(url))
                    else:
                        transport = await stack.enter_async_context(matrix(url, tmp))
                    run = await kills(url, tmp, transport, args.kills)
            print(f"{name}: kill -9 of the connection's owner mid-answer, {args.kills} kills")
            print("  " + summary("connection open again", run.takeover))
            print("  " + summary("its message answered", run.answered))
            print(
                f"  turns kept twice {run.kept_twice}, finals shown twice {run.shown_twice},"
                f" finals lost {run.lost}",
                flush=True,
            )
    finally:
        server.stop()


if __name__ == "__main__":
    anyio.run(main)
