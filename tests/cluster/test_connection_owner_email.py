"""One owner per platform connection, on email: two real daemons on one PostgreSQL
store, both with email enabled against the real Dovecot and Postfix of the email tests
(tests/email/servers.py). Only the holder of the connection lease reads the bot's IMAP
folder, so each mail from the allowed sender is answered once.

``kill -9`` of the owner while it answers a mail (the mail is taken from the shared
inbox, its turn under way): the standby takes the lease, reads on from the shared UID
cursor, and the mail is answered once; the mails answered before are not answered
again. A mail that comes while no replica owns the connection waits in the mailbox and
is answered once by the new owner."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.to_thread
import psycopg
import pytest

from tests.cluster.connection_daemons import ANSWER, LEASE, owner_pid, replica_config, start
from tests.cluster.processes import Replica
from tests.cluster.stall import probe_text
from tests.email.conftest import mail_servers
from tests.email.servers import AUTHSERV, MailServers
from tests.email.world import World, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]
__all__ = ["mail_servers"]
LONG = " ".join(f"word{n}" for n in range(150))
"""Echoed one word each 0.03 s by the scripted model: its turn lasts about 4.5 s."""


def email_config(world: World, pg_url: str) -> str:
    servers = world.servers
    return (
        replica_config(pg_url, "email")
        + f"""
imap_url = "imap+plain://127.0.0.1:{servers.imap_port}"
smtp_url = "smtp+plain://127.0.0.1:{servers.submission_port}"
address = "{world.bot}"
allowed_senders = ["{world.user("ann")}"]
authserv_id = "{AUTHSERV}"
drain_timeout = 5
"""
    )


def answers(world: World, text: str) -> int:
    return [text_of(mail) for mail in world.answers()].count(ANSWER + text)


def taken(url: str, text: str) -> bool:
    """Is the mail saying ``text`` in the shared inbox, taken by an owner?"""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT 1 FROM connection_seen WHERE channel_id = 'email'"
            " AND taken_token IS NOT NULL AND payload::text LIKE %s",
            (f"%{text}%",),
        ).fetchone()
    return row is not None


async def owner(url: str, replicas: list[Replica], gone: tuple[Replica, ...] = ()) -> Replica:
    """The replica holding the email connection, none of ``gone``, once it reads."""
    with anyio.fail_after(4 * LEASE + 30):
        while True:
            pid = await anyio.to_thread.run_sync(owner_pid, url, "email")
            found = [r for r in replicas if r.pid == pid and r not in gone]
            if found and found[0].logged("email_receiving"):
                return found[0]
            await anyio.sleep(0.1)


async def answered(world: World, text: str, timeout: float = 60) -> None:
    await world.say(text)
    await world.wait_for(lambda: answers(world, text) >= 1, timeout)


async def answered_once(world: World, text: str, timeout: float = 60) -> None:
    """``text`` answered, then a probe (tests/cluster/stall.py): a second answer of it
    (both replicas would answer at once) shows by then."""
    await answered(world, text, timeout)
    await answered(world, probe_text())
    assert answers(world, text) == 1, [text_of(m) for m in world.answers()]


async def test_each_mail_answered_once_across_a_kill_of_the_owner_mid_answer(
    mail_servers: MailServers, postgres_url: str, tmp_path: Path
) -> None:
    world = World.of(mail_servers, tmp_path)
    config = email_config(world, postgres_url)
    replicas: list[Replica] = []
    try:
        for index in range(2):
            replicas.append(await start(tmp_path, config, world.environment(), index))  # noqa: PERF401
        first = await owner(postgres_url, replicas)
        standby = next(r for r in replicas if r is not first)
        for n in range(2):
            await answered_once(world, f"hello {n}")
        assert not standby.logged("email_receiving")  # the standby never read the folder

        await world.say(LONG)
        with anyio.fail_after(60):
            while not await anyio.to_thread.run_sync(taken, postgres_url, LONG):
                await anyio.sleep(0.05)
        first.kill()  # its turn is under way: nothing answered yet
        assert answers(world, LONG) == 0
        await world.say("during the takeover")  # no owner reads: it waits in the mailbox
        second = await owner(postgres_url, replicas, gone=(first,))
        assert second is standby
        await world.wait_for(lambda: answers(world, LONG) >= 1, 60)
        await world.wait_for(lambda: answers(world, "during the takeover") >= 1, 60)
        await answered_once(world, "after the kill")
        assert answers(world, LONG) == 1, [text_of(m) for m in world.answers()]
        assert second.logged("connection_message_taken_over")
        assert answers(world, "during the takeover") == 1
        for n in range(2):
            assert answers(world, f"hello {n}") == 1
    finally:
        for replica in replicas:
            replica.close()
