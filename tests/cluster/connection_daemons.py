"""Real ``thalos-bot run`` replicas for the connection-owner tests: each its own
process and state folder, one PostgreSQL store, Discord (the fake) enabled on all of
them. Which replica owns the connection is read from ``connection_leases``."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
import psycopg

from tests.channels.cli_process import clean_env, command
from tests.cluster.daemons import STARTED, _copy
from tests.cluster.processes import Replica
from tests.daemon_config import SCRIPTED
from tests.fakes.discord_api import DiscordFake
from thalos_bot_discord import TOKEN_ENV

ANSWER = "You said: "
LEASE = 2.0
"""[storage] connection_lease of the replicas (seconds)."""


def replica_config(pg_url: str, channel: str, lease: float = LEASE) -> str:
    """A replica's bot.toml on the shared store, the scripted model, the console off,
    and the head of the ``[channels.<channel>]`` table (its keys follow)."""
    return f"""
state_dir = "state"
[provider]
{SCRIPTED}
[pump]
flush_interval = "0.1s"
shutdown_grace = "5s"
[logging]
format = "json"
[storage]
url = "{pg_url}"
connection_lease = "{lease}s"
[channels.console]
enabled = false
[channels.{channel}]
enabled = true
"""


def discord_config(fake: DiscordFake, pg_url: str, owner: int, lease: float = LEASE) -> str:
    return replica_config(pg_url, "discord", lease) + discord_keys(fake, [str(owner)])


def discord_keys(fake: DiscordFake, people: list[str]) -> str:
    """``[channels.discord]``'s keys for ``people`` (after its table's head)."""
    return f"""
allowed_users = [{", ".join(people)}]
base_url = "{fake.base_url}"
gateway_url = "{fake.gateway_url}"
guild_ready_timeout = 0.05
backoff_initial = 0.05
backoff_max = 0.2
drain_timeout = 5
"""


async def start(tmp: Path, config: str, env: dict[str, str], index: int) -> Replica:
    """``thalos-bot run`` in ``tmp/replica-<index>``; returns once it logged ``ready``."""
    home = tmp / f"replica-{index}"
    home.mkdir(exist_ok=True)
    (home / "bot.toml").write_text(config, encoding="utf-8")
    log = tmp / f"replica-{index}-{len(list(tmp.glob(f'replica-{index}-*.log')))}.log"
    process = subprocess.Popen(
        [*command(), "run"],
        cwd=home,
        env=clean_env(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    ready = threading.Event()
    threading.Thread(target=_copy, args=(process, log, ready), daemon=True).start()
    replica = Replica(process, 0, log)
    try:
        await anyio.to_thread.run_sync(ready.wait, STARTED)
    except BaseException:  # cancelled while it starts: it is nobody's to close later
        replica.close()
        raise
    if process.poll() is not None or not replica.logged("ready"):
        replica.close()
        raise AssertionError(f"replica {index} did not start: {log.read_text()[-3000:]}")
    return replica


TAKEN_UP = ("outbox_taken_over", "outbox_redelivering", "connection_message_taken_over")
"""What a replica logs as it takes up what a dead one left: a final kept and left pending
(claimed at its sweep, or as it opened the connection), or a message whose turn was not
kept yet (it runs again)."""


async def took_up_the_dead_ones(replica: Replica, timeout: float = 40) -> None:
    """Until ``replica`` took up the answer a killed replica left unsent."""
    with anyio.fail_after(timeout):
        while not any(replica.logged(event) for event in TAKEN_UP):
            await anyio.sleep(0.05)


def owner_pid(url: str, channel: str) -> int | None:
    """The pid of the replica holding ``channel``'s connection lease (unexpired)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT holder FROM connection_leases WHERE channel_id = %s"
            " AND holder IS NOT NULL AND expires_at > now()",
            (channel,),
        ).fetchone()
    return None if row is None else int(str(row[0]).split(":")[1])


@dataclass
class Discords:
    fake: DiscordFake
    url: str
    user: int
    replicas: list[Replica]
    config: str
    tmp: Path

    async def restart(self, old: Replica) -> Replica:
        """``old`` (stopped) started again in its own state folder."""
        index = self.replicas.index(old)
        fresh = await start(self.tmp, self.config, {TOKEN_ENV: self.fake.token}, index)
        self.replicas[index] = fresh
        return fresh

    async def add(self) -> Replica:
        """One more replica (a standby, while another owns the connection)."""
        fresh = await start(self.tmp, self.config, {TOKEN_ENV: self.fake.token}, len(self.replicas))
        self.replicas.append(fresh)
        return fresh

    @property
    def dm(self) -> int:
        return self.fake.dm_channel_id(self.user)

    def answers(self, text: str) -> int:
        return self.fake.texts(self.dm).count(ANSWER + text)

    async def say(self, text: str, timeout: float = 30) -> float:
        """DM ``text``; return the seconds until its answer showed."""
        began = anyio.current_time()
        self.fake.say_dm(self.user, text)
        await self.fake.wait_for(lambda: self.answers(text) >= 1 or None, timeout)
        return anyio.current_time() - began

    async def owner(self, timeout: float = 20, *, gone: tuple[Replica, ...] = ()) -> Replica:
        """The replica holding the Discord connection, none of ``gone``, once its gateway
        session is up (what is said before that reaches no replica: a new owner's session
        is new, not resumed)."""
        with anyio.fail_after(timeout):
            while True:
                pid = await anyio.to_thread.run_sync(owner_pid, self.url, "discord")
                found = [r for r in self.replicas if r.pid == pid and r not in gone]
                if found and found[0].logged("discord_ready"):
                    return found[0]  # its gateway session is up
                await anyio.sleep(0.1)


@asynccontextmanager
async def running_discords(
    fake: DiscordFake, pg_url: str, tmp: Path, count: int, *, lease: float = LEASE
) -> AsyncIterator[Discords]:
    user = fake.add_user("owner")
    config = discord_config(fake, pg_url, user, lease)
    replicas: list[Replica] = []
    try:
        for index in range(count):
            # One by one: with a 2 s lease, the first owner opening its connection while
            # the others import can miss a renewal (see start_together).
            replicas.append(  # noqa: PERF401 - started one by one, closed if one fails
                await start(tmp, config, {TOKEN_ENV: fake.token}, index)
            )
        yield Discords(fake, pg_url, user, replicas, config, tmp)
    finally:
        for replica in replicas:
            replica.close()
