"""Turns run by any replica, the same for every transport: which replica ran each turn
(its log's ``connection_turn_taken`` lines), who holds a conversation's lease, and the
cases each transport's test plays (:class:`Crowd`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
import anyio.to_thread

from tests.cluster import stall
from tests.cluster.connection_daemons import LEASE, owner_pid
from tests.cluster.processes import Replica
from tests.cluster.stall import WORDS
from tests.cluster.stall import runner_pid as lane_holder

SETTLE = 2.0
"""Seconds a second answer would have had to show (several people talk at once here,
across replicas: no one probe orders them all)."""


def taken(replica: Replica) -> list[tuple[str, int]]:
    """(conversation, seq) of each inbox row ``replica`` took and handed to its pump."""
    found: list[tuple[str, int]] = []
    for line in replica.log.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"connection_turn_taken"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        found.append((str(record["conversation"]), int(record["seq"])))
    return found


def sees_all(replica: Replica, senders: int) -> bool:
    """Whether ``replica`` last read ``senders`` replicas sending and an owner of the
    connection (its ``connection_senders`` lines)."""
    last: dict[str, object] = {}
    for line in replica.log.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"connection_senders"' in line:
            try:
                last = json.loads(line)
            except ValueError:
                continue
    return last.get("senders") == senders and last.get("owner") is not None


def runners(replicas: list[Replica]) -> dict[int, set[str]]:
    """pid → the conversations whose rows it took."""
    return {r.pid: {conversation for conversation, _ in taken(r)} for r in replicas}


def takes(replicas: list[Replica]) -> Counter[int]:
    """How often each inbox row was taken, over all the replicas."""
    return Counter(seq for r in replicas for _, seq in taken(r))


@dataclass
class Crowd:
    """People talking to the bot on one transport, each in a conversation of their own,
    with three replicas running it."""

    url: str
    channel: str
    people: list[str]
    replicas: list[Replica]
    say: Callable[[str, str], None]
    """(person, text): said in that person's conversation."""
    answers: Callable[[str, str], int]
    """(person, text): how often the bot's answer to ``text`` shows there."""
    conversation: Callable[[str], str]
    """A person's conversation id, as the channel names it."""

    async def shown(self, person: str, text: str, timeout: float = 40) -> None:
        with anyio.fail_after(timeout):
            while self.answers(person, text) < 1:
                await anyio.sleep(0.05)

    async def owner(self) -> Replica:
        """The replica holding the connection, once it opened it."""
        with anyio.fail_after(30):
            while True:
                pid = await anyio.to_thread.run_sync(owner_pid, self.url, self.channel)
                for replica in self.replicas:
                    if replica.pid == pid and replica.logged("connection_opened"):
                        return replica
                await anyio.sleep(0.05)

    async def everyone_says(self, what: str, timeout: float = 40) -> None:
        """Each person says ``<what> from <person>`` at once; each answered."""
        for person in self.people:
            self.say(person, f"{what} from {person}")
        for person in self.people:
            await self.shown(person, f"{what} from {person}", timeout)

    async def settle_once(self, what: str) -> None:
        await anyio.sleep(SETTLE)
        for person in self.people:
            text = f"{what} from {person}"
            assert self.answers(person, text) == 1, (person, text)


async def spread_once(crowd: Crowd) -> None:
    """Everyone talks twice: each message answered once, the turns ran on the replicas
    that do not hold the connection (the owner comes last in each conversation's order:
    ``SeenLeaseBook.order``, whose spread among the others is reckoned in
    ``test_seen_spread.py``), and no inbox row was taken twice."""
    owner = await crowd.owner()
    await crowd.everyone_says("first")
    await crowd.everyone_says("second")
    await crowd.settle_once("first")
    await crowd.settle_once("second")
    ran = runners(crowd.replicas)
    assert not ran[owner.pid], ran
    assert set().union(*ran.values()) == {crowd.conversation(p) for p in crowd.people}, ran
    counted = takes(crowd.replicas)
    assert all(n == 1 for n in counted.values()), counted
    assert sum(counted.values()) == 2 * len(crowd.people), counted


async def kill_a_runner_mid_turn(crowd: Crowd, owner: Replica) -> None:
    """The replica running a turn, not the connection's owner, is killed (``kill -9``)
    a few words into its answer: the conversation's next lease holder takes the row
    again and answers it once; the person's next message is answered once too."""
    await crowd.everyone_says("hello")
    chosen: tuple[str, Replica] | None = None
    for person in crowd.people:
        conversation = crowd.conversation(person)
        pid = await anyio.to_thread.run_sync(lane_holder, crowd.url, crowd.channel, conversation)
        held = [r for r in crowd.replicas if r.pid == pid and r is not owner]
        if held:
            chosen = (person, held[0])
            break
    assert chosen is not None, runners(crowd.replicas)
    person, runner = chosen
    text = f"{crowd.channel}-cut {WORDS}"
    crowd.say(person, text)
    await stall.until_taken(crowd.url, crowd.channel, f"{crowd.channel}-cut")
    await anyio.sleep(0.3)  # a few words into its answer
    runner.kill()
    await crowd.shown(person, text, timeout=4 * LEASE + 30)
    crowd.say(person, "after the kill")
    await crowd.shown(person, "after the kill", timeout=4 * LEASE + 30)
    await anyio.sleep(SETTLE)
    assert crowd.answers(person, text) == 1
    assert crowd.answers(person, "after the kill") == 1
    assert any(r.logged("lease_taken") for r in crowd.replicas if r is not runner)
    assert owner.process.poll() is None, "the owner kept the connection"


async def kill_the_owner(
    crowd: Crowd, owner: Replica, before: Callable[[], Awaitable[None]] | None = None
) -> None:
    """The connection's owner is killed (``kill -9``; ``before`` runs just before); what
    everyone says next is answered once, by whichever replica holds each conversation."""
    await crowd.everyone_says("hello")
    if before is not None:
        await before()
    owner.kill()
    await crowd.everyone_says("after the kill", timeout=4 * LEASE + 40)
    await crowd.settle_once("after the kill")
