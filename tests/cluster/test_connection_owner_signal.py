"""One owner per platform connection, on Signal: two real daemons on one PostgreSQL
store, both with Signal enabled, one signal-cli daemon (the fake, which writes every
event to every subscribed connection as signal-cli does). Only the owner of the
connection lease subscribes to the events, so each message is answered once.

``kill -9`` of the owner mid-answer: its send of the answer was carried out but the
answer of the call was lost, and the recipient's phone is off, so no receipt says it
arrived; the owner dies while it waits for one. The standby takes the connection and,
once the dead owner's claim on the answer ran out, that send in doubt: the phone comes
back and its receipt reaches the new owner, which finds the answer sent (the send's
beginning is kept beside the lease) and does not send it again.

Before that, on the same daemons, SIGSTOP of the owner mid-answer: the standby answers,
and the old owner, continued, finds its token fenced (tests/cluster/stall.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import psycopg
import pytest

from tests.cluster.connection_daemons import ANSWER, LEASE, owner_pid, replica_config, start
from tests.cluster.processes import Replica
from tests.cluster.stall import Talk, probe_text, stall_owner_mid_answer
from tests.fakes.signal_cli import SignalCliFake
from thalos_bot.service.stores import OUTBOX_CLAIM_SPAN
from thalos_bot_signal import ACCOUNT_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]


@pytest.fixture
def signal() -> Iterator[SignalCliFake]:
    with SignalCliFake() as fake:
        yield fake
    assert fake.failures == [], fake.failures
    assert fake.violations == [], fake.violations


def signal_config(fake: SignalCliFake, pg_url: str) -> str:
    return (
        replica_config(pg_url, "signal")
        + f"""
daemon_url = "{fake.url}"
allowed_users = ["{fake.world.user.number}"]
send_interval = 0.05
request_timeout = 5
probe_wait = 20
backoff_initial = 0.05
backoff_max = 0.2
drain_timeout = 5
"""
    )


def answers(fake: SignalCliFake, text: str) -> int:
    return [m.text for m in fake.mine(fake.chat(fake.world.user))].count(ANSWER + text)


async def answered(fake: SignalCliFake, text: str, timeout: float = 30) -> None:
    fake.say(text, fake.world.user)
    await fake.wait_for(lambda: answers(fake, text) >= 1 or None, timeout)


async def quiet(fake: SignalCliFake) -> None:
    """A probe said and answered (tests/cluster/stall.py): a second answer of what was
    said before (both replicas would answer at once) shows by then."""
    await answered(fake, probe_text())


async def answered_once(fake: SignalCliFake, text: str, timeout: float = 30) -> None:
    await answered(fake, text, timeout)
    await quiet(fake)
    assert answers(fake, text) == 1, [m.text for m in fake.mine(fake.chat(fake.world.user))]


def pending_finals(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM outbox WHERE channel_id = 'signal' AND state = 'pending'"
        ).fetchone()
    return 0 if row is None else int(row[0])


async def owner(fake: SignalCliFake, url: str, replicas: list[Replica]) -> Replica:
    """The replica holding the Signal connection, once it reads signal-cli's events."""
    with anyio.fail_after(4 * LEASE + 20):
        while True:
            pid = await anyio.to_thread.run_sync(owner_pid, url, "signal")
            found = [r for r in replicas if r.pid == pid and r.process.poll() is None]
            if found and fake.streams == 1:
                return found[0]
            await anyio.sleep(0.1)


async def test_each_signal_message_answered_once_across_a_stall_and_a_kill_mid_answer(
    signal: SignalCliFake, postgres_url: str, tmp_path: Path
) -> None:
    config = signal_config(signal, postgres_url)
    env = {ACCOUNT_ENV: signal.world.bot.number}
    replicas: list[Replica] = []
    user = signal.world.user
    try:
        for index in range(2):
            replicas.append(await start(tmp_path, config, env, index))  # noqa: PERF401
        await owner(signal, postgres_url, replicas)
        for n in range(2):
            await answered_once(signal, f"hello {n}")
        assert signal.most_streams == 1  # the standby never subscribed

        async def say(text: str) -> None:
            signal.say(text, user)

        talk = Talk(postgres_url, "signal", say, lambda text: answers(signal, text))
        await stall_owner_mid_answer(talk, replicas)

        first = await owner(signal, postgres_url, replicas)  # the one that took over

        signal.offline.add(user.uuid)
        signal.lose_answers = 1  # carried out, its answer lost: the send is in doubt
        signal.say("mid answer", user)
        await signal.wait_for(lambda: answers(signal, "mid answer") >= 1 or None, 30)
        first.kill()  # waiting for a receipt that says the answer arrived
        signal.back_online(user)  # its receipt waits in signal-cli for the next reader

        second = await owner(signal, postgres_url, replicas)
        assert second is not first
        await answered_once(signal, "after the kill")
        # The dead owner's claim on the answer in doubt runs out; the new owner settles it.
        with anyio.fail_after(OUTBOX_CLAIM_SPAN + 60):
            while await anyio.to_thread.run_sync(pending_finals, postgres_url):
                await anyio.sleep(0.2)
        await quiet(signal)
        assert answers(signal, "mid answer") == 1, [m.text for m in signal.mine(signal.chat(user))]
        assert second.logged("outbox_taken_over") or second.logged("outbox_redelivering")
    finally:
        for replica in replicas:
            replica.close()
