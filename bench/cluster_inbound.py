"""Replicas, inbound: what the replica machinery adds between a platform connection
receiving a message and the pump getting it, at a steady rate, per transport.

    python bench/cluster_inbound.py [--rate 100] [--seconds 10] [--conversations 20]
        [--only discord,slack,matrix,signal] [--fast-disk]

Starts a throwaway PostgreSQL (durable, as in production: ``fsync``,
``synchronous_commit`` and ``full_page_writes`` on, unless ``--fast-disk``), then per
transport runs the real :class:`~thalos_bot.service.standby.Standby` as the host builds
it on replicas (the connection lease, the shared inbox, the shared 429 waits) around a
stand-in channel: its source yields ``--rate`` messages a second for ``--seconds``,
spread over ``--conversations`` conversations, each shaped as that transport's (its
conversation ids, its own message ids, a sender, a line of text). A reader in the pump's place takes
each from the standby's source and at once says it was dealt with (the inbox row is
then marked done, as after a command; a turn's commit marks it done instead, which
is the turn's cost, not the intake's).

Measured per message: from the channel yielding it to the reader getting it. The same
stand-in channel read directly is the single-process path; what the replica path adds
is the difference. Printed per transport: p50, p99 and the maximum of both, and the p99
added. The path is the same code for every transport (the plug-in's own parsing comes
before it and is the same with or without replicas): the transports differ here only
in the size and shape of what is stored.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import anyio
import anyio.lowlevel
import structlog

ROOT = Path(__file__).resolve().parents[1]
sys.path[0] = str(ROOT)  # not bench/: its telegram.py would shadow the library

from bench.pg_durable import make_durable  # noqa: E402
from tests.storage.postgres import start_server  # noqa: E402
from thalos_bot.channels.ports import InboundMessage, Sender  # noqa: E402
from thalos_bot.channels.registry import ChannelPair  # noqa: E402
from thalos_bot.cluster.connection_holds import ConnectionHolds  # noqa: E402
from thalos_bot.cluster.connection_inbox import ConnectionInbox  # noqa: E402
from thalos_bot.cluster.connections import ConnectionLease  # noqa: E402
from thalos_bot.domain.ids import ChannelId, ConversationId  # noqa: E402
from thalos_bot.domain.security import SecurityContext  # noqa: E402
from thalos_bot.service.schema import PG_ALL_MIGRATIONS  # noqa: E402
from thalos_bot.service.standby import Received, Standby  # noqa: E402
from thalos_bot.storage.pg.database import PgDatabase  # noqa: E402

TEXT = "could you look at the deploy log from this morning and tell me what failed?"


@dataclass(frozen=True)
class Shape:
    """How one transport names a conversation, a message and a person."""

    conversation: Callable[[int], str]
    ref: Callable[[int], str]
    user: str


SHAPES = {
    "discord": Shape(
        lambda c: f"dm:{1180000000000000000 + c}", lambda n: str(1190000000000000000 + n), "4207"
    ),
    "slack": Shape(lambda c: f"D0{c:08d}", lambda n: f"1733400000.{n:06d}", "U0ABCDEF12"),
    "matrix": Shape(
        lambda c: f"!room{c:04d}abcdefgh:example.org",
        lambda n: f"$ev{n:08d}aGVsbG8gd29ybGQgZnJvbSBtYXRyaXg",
        "@alice:example.org",
    ),
    "signal": Shape(
        lambda c: f"user:6f1c2a9e-0000-4000-8000-{c:012d}",
        lambda n: str(1733400000000 + n),
        "+15550001234",
    ),
}


class Stamped:
    """The stand-in channel's source: messages at ``rate`` a second, each stamped with
    this process's clock when it is yielded."""

    def __init__(self, channel: str, shape: Shape, rate: float, count: int, spread: int) -> None:
        self.channel, self.shape = channel, shape
        self.rate, self.count, self.spread = rate, count, spread
        self.sent: dict[str, float] = {}
        self.done = anyio.Event()

    async def messages(self) -> AsyncIterator[Received]:
        began = time.monotonic()
        sender = Sender(SecurityContext.of("owner", ["admin"]), "Owner", self.shape.user)
        for n in range(self.count):
            delay = began + n / self.rate - time.monotonic()
            if delay > 0:
                await anyio.sleep(delay)
            ref = self.shape.ref(n)
            self.sent[ref] = time.monotonic()
            yield InboundMessage(
                ChannelId(self.channel),
                ConversationId(self.shape.conversation(n % self.spread)),
                sender,
                f"{TEXT} ({n})",
                datetime.now(UTC),
                message_ref=ref,
            )
        await self.done.wait()  # a connection stays open


class NoAdapter:
    """Nothing is sent in this bench (a WireAdapter is not needed for the holds)."""

    channel_id = "bench"


async def read(
    source: AsyncIterator[Received], sent: dict[str, float], count: int, took: list[float]
) -> None:
    async for message in source:
        if not isinstance(message, InboundMessage) or message.message_ref is None:
            continue
        took.append(time.monotonic() - sent[message.message_ref])
        if message.handled is not None:
            message.handled.set()
        if len(took) == count:
            return


async def direct(channel: str, args: argparse.Namespace) -> list[float]:
    """One process: the pump reads the channel's source itself."""
    count = int(args.rate * args.seconds)
    source = Stamped(channel, SHAPES[channel], args.rate, count, args.conversations)
    took: list[float] = []
    await read(source.messages(), source.sent, count, took)
    source.done.set()
    return took


async def replicated(db: PgDatabase, channel: str, args: argparse.Namespace) -> list[float]:
    """Replicas: the owner's standby stores each message in the shared inbox and hands
    it on from there."""
    count = int(args.rate * args.seconds)
    source = Stamped(channel, SHAPES[channel], args.rate, count, args.conversations)

    @asynccontextmanager
    async def opened() -> AsyncIterator[ChannelPair]:
        yield ChannelPair(source, NoAdapter())  # type: ignore[arg-type]

    lease = ConnectionLease(db, channel, f"bench:{channel}", 4.0)
    standby = Standby(
        ChannelId(channel), opened, lease, ConnectionInbox(db, lease), ConnectionHolds(db, channel)
    )
    took: list[float] = []
    async with anyio.create_task_group() as group:
        pair = await group.start(standby.run)
        assert pair is not None, "the bench's standby did not take the lease"
        standby.serve(lambda _: anyio.lowlevel.checkpoint(), lambda _: None)
        await read(standby.source.messages(), source.sent, count, took)
        source.done.set()
        standby.stop()
    return took


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def line(name: str, took: list[float]) -> str:
    ms = [t * 1000 for t in took]
    return (
        f"{name}: p50 {statistics.median(ms):.1f} ms, p99 {percentile(ms, 0.99):.1f} ms,"
        f" max {max(ms):.1f} ms ({len(ms)} messages)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--only", default=",".join(SHAPES))
    parser.add_argument("--fast-disk", action="store_true", help="leave fsync off")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # psycopg's notes on the connections the end cancels
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    server = start_server()
    try:
        server.create_database("inbound")
        url = server.url("inbound")
        if not args.fast_disk:  # the test server runs without them; production does not
            make_durable(server)
        async with await PgDatabase.open(url, migrations=PG_ALL_MIGRATIONS) as db:
            for channel in args.only.split(","):
                one = await direct(channel, args)
                many = await replicated(db, channel, args)
                added = (percentile(many, 0.99) - percentile(one, 0.99)) * 1000
                print(
                    f"{channel}: {args.rate:g} messages a second for {args.seconds:g} s,"
                    f" {args.conversations} conversations"
                )
                print("  " + line("one process", one))
                print("  " + line("replicas (shared inbox)", many))
                print(f"  p99 added: {added:.1f} ms", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    anyio.run(main)
