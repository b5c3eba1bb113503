"""SIGSTOP of a connection's owner (or of the replica running the turn) mid-answer, the
same for every transport.

The owner takes a long message from the shared inbox and starts answering it (the
scripted model echoes a word every 0.03 s); it is stopped there. Its lease runs out, a
standby takes the connection and answers that message and the next one. Then the old
owner continues: its renewal finds the token fenced and it closes its connection, and
the turn it was in the middle of is refused at its commit; nothing is shown twice.

"Nothing twice" is read after a probe: a message said last and answered (:meth:`Talk.
quiet`), never after a fixed wait. The owner answers a conversation in order, so when the
probe's answer shows it is done with everything said before; a second answer (another
connection open, an event delivered again, a stale owner) had that long to show."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import anyio.to_thread
import psycopg

from tests.cluster.connection_daemons import LEASE, owner_pid
from tests.cluster.processes import Replica

WORDS = " ".join(f"w{n}" for n in range(40))
"""The tail of a message answered slowly: its echo takes about 1.2 s, so a signal sent
once it was taken lands mid-answer."""
_probes = itertools.count(1)


def probe_text() -> str:
    """A message of its own for :meth:`Talk.quiet` (a new one each time)."""
    return f"probe {next(_probes)}"


async def pause() -> None:
    await anyio.sleep(0.02)


@dataclass
class Talk:
    """A person talking to the bot on one transport."""

    url: str
    channel: str
    say: Callable[[str], Awaitable[None]]
    answers: Callable[[str], int]
    """How often the bot's answer to this text shows."""
    look: Callable[[], Awaitable[None]] = pause
    """Before looking again at what the person was shown (Matrix: the person's /sync)."""

    async def until(self, found: Callable[[], bool], timeout: float = 60) -> None:
        with anyio.fail_after(timeout):
            while not found():
                await self.look()

    async def answered_once(self, text: str) -> None:
        await self.say(text)
        await self.until(lambda: self.answers(text) >= 1)
        await self.quiet()
        assert self.answers(text) == 1, text

    async def quiet(self) -> None:
        """Say a probe and wait for its answer (see the module): what was said before
        is answered by then, and any second answer of it had as long to show."""
        probe = probe_text()
        await self.say(probe)
        await self.until(lambda: self.answers(probe) >= 1)


def count(replica: Replica, event: str) -> int:
    text = replica.log.read_text(encoding="utf-8", errors="replace")
    return text.count(f'"event": "{event}"')


def taken(url: str, channel: str, marker: str) -> str | None:
    """The conversation of the message starting with ``marker`` once it was taken from
    the inbox (its turn runs); None before."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT conversation_id FROM connection_seen WHERE channel_id = %s"
            " AND taken_token IS NOT NULL AND payload->>'text' LIKE %s",
            (channel, marker + "%"),
        ).fetchone()
    return None if row is None else str(row[0])


async def until_taken(url: str, channel: str, marker: str, timeout: float = 60) -> str:
    """Wait for :func:`taken`; the message's conversation."""
    with anyio.fail_after(timeout):
        while (conversation := await anyio.to_thread.run_sync(taken, url, channel, marker)) is None:
            await anyio.sleep(0.02)
    return conversation


async def holder(talk: Talk, replicas: list[Replica], opened: dict[int, int]) -> Replica:
    """The live replica holding ``talk``'s connection lease once it opened the
    connection more often than ``opened`` says (pid → ``connection_opened`` lines)."""
    with anyio.fail_after(4 * LEASE + 30):
        while True:
            pid = await anyio.to_thread.run_sync(owner_pid, talk.url, talk.channel)
            for replica in replicas:
                if (
                    replica.pid == pid
                    and not replica.stopped
                    and replica.process.poll() is None
                    and count(replica, "connection_opened") > opened.get(replica.pid, 0)
                ):
                    return replica
            await anyio.sleep(0.1)


def runner_pid(url: str, channel: str, conversation: str) -> int | None:
    """The pid of the replica holding ``conversation``'s lease (turns on any replica);
    None where the connection's owner runs every turn (no conversation lease)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT holder FROM conversation_leases WHERE channel_id = %s AND lane = %s"
            " AND holder IS NOT NULL AND expires_at > now()",
            (channel, conversation),
        ).fetchone()
    return None if row is None else int(str(row[0]).split(":")[1])


async def stall_owner_mid_answer(talk: Talk, replicas: list[Replica]) -> tuple[Replica, Replica]:
    """Stop the replica answering a message mid-answer, and continue it after another
    took over (see the module): the connection's owner where it runs every turn; on a
    transport whose turns run on any replica, the conversation's lease holder (whose
    lane another takes and runs the message again), and then the connection's owner
    too, stopped and continued in its turn. Returns (the replica stopped mid-answer,
    the one that took over from it)."""
    owner = await holder(talk, replicas, {})
    opened = {r.pid: count(r, "connection_opened") for r in replicas}
    marker = f"{talk.channel}-stall"
    text = f"{marker} {WORDS}"
    await talk.say(text)
    conversation = await until_taken(talk.url, talk.channel, marker)
    pid = await anyio.to_thread.run_sync(runner_pid, talk.url, talk.channel, conversation)
    first = next((r for r in replicas if r.pid == pid), owner)
    await anyio.sleep(0.3)  # a few words into its answer
    first.pause()
    try:
        if first is owner:
            second = await holder(talk, [r for r in replicas if r is not first], opened)
        await talk.until(lambda: talk.answers(text) >= 1)
        await talk.answered_once("during the stall")
        if first is not owner:  # the conversation's lease holder now
            pid = await anyio.to_thread.run_sync(runner_pid, talk.url, talk.channel, conversation)
            (second,) = [r for r in replicas if r.pid == pid and r is not first]
    finally:
        first.resume()
    if first is owner:
        with anyio.fail_after(30):  # the renewal after waking up finds the token fenced
            while not first.logged("connection_closed"):
                await anyio.sleep(0.05)
        assert first.logged("connection_lease_lost")
    # Its turn went on when it woke up; the commit was refused (the inbox row was the
    # next runner's by then), so no final of it went out.
    with anyio.fail_after(30):
        while not first.logged("connection_turn_fenced"):
            await anyio.sleep(0.05)
    # The old runner's turn is over (all it could say, it said); a new message is
    # answered once, and by then nothing said before was shown twice.
    await talk.answered_once("after the stall")
    assert talk.answers(text) == 1, text
    assert talk.answers("during the stall") == 1
    if first is not owner:
        await _stall_the_connection(talk, replicas, owner)
    return first, second


async def _stall_the_connection(talk: Talk, replicas: list[Replica], owner: Replica) -> None:
    """The connection's owner (running no turn) stopped: another replica opens the
    connection and what is said meanwhile is answered once; continued, the old owner
    closes its connection and passes nothing on."""
    opened = {r.pid: count(r, "connection_opened") for r in replicas}
    owner.pause()
    try:
        await holder(talk, [r for r in replicas if r is not owner], opened)
        await talk.answered_once("while the owner is stopped")
    finally:
        owner.resume()
    with anyio.fail_after(30):
        while not owner.logged("connection_closed"):
            await anyio.sleep(0.05)
    assert owner.logged("connection_lease_lost")
    await talk.answered_once("after the owner continued")
    assert talk.answers("while the owner is stopped") == 1
