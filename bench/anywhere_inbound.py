"""Replicas, inbound, with turns on any replica (Slack, Discord): what the path adds from
the connection's owner storing a message to the replica holding its conversation
handing it to the pump, at a steady rate over many conversations.

    python bench/anywhere_inbound.py [--rate 100] [--seconds 10] [--conversations 100]
        [--replicas 1,3] [--only slack,discord] [--lease 4] [--fast-disk]

Starts a throwaway PostgreSQL (durable unless ``--fast-disk``, as
``bench/cluster_inbound.py``; with ``pg_stat_statements`` loaded, to count the round
trips), then per transport and per replica count runs that many replica *processes*
on a database of their own. Each runs the real
:class:`~thalos_bot.service.anywhere.Anywhere` as the host builds it on replicas (the
inbox as lanes, the conversation leases and their spread, the drain, the shared 429
waits) around a stand-in send-only side; the first also holds the connection: the real
:class:`~thalos_bot.service.standby.Standby` around the stand-in channel of
``bench/cluster_inbound.py``, which yields ``--rate`` messages a second for
``--seconds``, spread over ``--conversations`` conversations (message ``n`` goes to
conversation ``n mod conversations``, so each conversation's first message comes in the
first ``conversations / rate`` seconds). A reader in each replica's pump's place takes
each message from its inlet and at once says it was dealt with (its row is then done,
as after a command; a turn's commit does that instead).

Measured per message: from the channel yielding it in the owner's process (the store of
its row and its ``NOTIFY`` come after) to the reader of the replica that took it getting
it (``time.monotonic``: one clock for every process on the machine). The same channel
read directly (one process, as on SQLite, where nothing is stored on the way in) is the
baseline. Printed per run: p50, p99, max; apart, for the first message of each
conversation (its lease is taken then, after the spread's wait: see
:meth:`~thalos_bot.cluster.seen_lanes.SeenLeaseBook.acquire`) and for the rest, and
split at the commit of the owner's store; which replica took how many messages; the
transactions that wrote and the WAL's flushes to disk per message; and the round trips
to the database per message (every statement, ``BEGIN`` and ``COMMIT`` the replicas
sent while the messages ran, heartbeats included, as ``pg_stat_statements`` counts
them), with the most frequent. Messages begin a heartbeat round after every replica
listens, so each knows the others send.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import psycopg
import structlog
from anyio.streams.buffered import BufferedByteReceiveStream

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parents[1]
sys.path[0] = str(ROOT)  # not bench/: its telegram.py would shadow the library

from bench.cluster_inbound import SHAPES, Stamped, direct, percentile  # noqa: E402
from bench.pg_durable import make_durable  # noqa: E402
from tests.storage.postgres import PostgresServer, start_server  # noqa: E402
from thalos_bot.channels.delivery.channel import WireAdapter  # noqa: E402
from thalos_bot.channels.delivery.failure import Classified  # noqa: E402
from thalos_bot.channels.delivery.rounds import Rendering  # noqa: E402
from thalos_bot.channels.delivery.wire import Outgoing, WireLimits  # noqa: E402
from thalos_bot.channels.inlet import Inlet  # noqa: E402
from thalos_bot.channels.ports import InboundMessage  # noqa: E402
from thalos_bot.channels.registry import ChannelPair  # noqa: E402
from thalos_bot.cluster import connection_holds  # noqa: E402
from thalos_bot.cluster.connections import ConnectionLease  # noqa: E402
from thalos_bot.domain.events import ToolImage, VoiceClip  # noqa: E402
from thalos_bot.domain.ids import ChannelId  # noqa: E402
from thalos_bot.service.anywhere import Anywhere  # noqa: E402
from thalos_bot.service.schema import PG_ALL_MIGRATIONS  # noqa: E402
from thalos_bot.service.standby import Received, Standby  # noqa: E402
from thalos_bot.storage.pg.database import PgDatabase  # noqa: E402

TOP = 10
"""Statements listed per run."""
STATS_FLUSHED = 2.0
"""Seconds after which every backend has reported its WAL figures."""


# -- one replica (a child process) ------------------------------------------------------


class Unsent:
    """A send-only side's wire that is never called (nothing is answered here)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.limits = WireLimits(
            message_units=4000,
            caption_units=1000,
            chat_min_interval=1.0,
            global_rate=50.0,
            resend="find",
        )

    def render(self, source: str) -> str:
        return source

    def classify(self, exc: Exception) -> Classified | None:
        return None

    async def send(self, chat: str, message: Outgoing[None]) -> str:
        raise AssertionError("the bench sends nothing")

    async def edit(self, chat: str, ref: str, message: Outgoing[None]) -> None:
        raise AssertionError("the bench sends nothing")

    async def upload(self, chat: str, image: ToolImage | VoiceClip, caption: Outgoing[None]) -> str:
        raise AssertionError("the bench sends nothing")

    async def typing(self, chat: str, thread: str | None) -> None:
        pass

    async def find(self, chat: str, key: str) -> str | None:
        return None


class Gated(Stamped):
    """The stand-in channel, yielding only once every replica listens."""

    def __init__(self, go: anyio.Event, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.go = go
        self.channel_id = ChannelId(self.channel)

    async def messages(self) -> AsyncIterator[Received]:
        await self.go.wait()
        async for message in super().messages():
            yield message


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def pump(inlet: Inlet) -> None:
    """In the pump's place: each message noted as it is read, then dealt with."""
    async for message in inlet.messages():
        if isinstance(message, InboundMessage) and message.message_ref is not None:
            say(f"took {message.message_ref} {time.monotonic():.6f} {message.conversation_id}")
            if message.handled is not None:
                message.handled.set()


async def told(go: anyio.Event) -> None:
    """The coordinator's word on stdin: ``go``, then the end (stdin closed)."""
    while True:
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line:
            return
        if line.strip() == "go":
            go.set()


async def replica(args: argparse.Namespace) -> None:
    channel = ChannelId(args.channel)
    name = f"bench-{args.index}:{os.getpid()}"
    go = anyio.Event()
    db = await PgDatabase.open(args.url, migrations=PG_ALL_MIGRATIONS, pool_size=args.pool)
    async with db, anyio.create_task_group() as group:
        adapter: WireAdapter[str, None] = WireAdapter(
            Unsent(args.channel),
            group,
            Rendering("edit", 5.0, 1.0, 10.0),
            channel_id=channel,
            parse=lambda conversation: (str(conversation), None),
            private=lambda chat: True,
        )
        inlet = Inlet(channel)
        anywhere = Anywhere(db, args.url, ChannelPair(inlet, adapter), name, args.lease)
        source: Gated | None = None
        async with anywhere.running():
            standby: Standby | None = None
            if args.index == 0:
                count = int(args.rate * args.seconds)
                source = Gated(
                    go, args.channel, SHAPES[args.channel], args.rate, count, args.conversations
                )
                opened_source = source
                stored: dict[str, float] = {}
                store = anywhere.store

                async def timed(message: InboundMessage) -> bool:
                    kept = await store(message)
                    stored[message.message_ref or ""] = time.monotonic()
                    return kept

                anywhere.store = timed  # type: ignore[method-assign]

                @asynccontextmanager
                async def opened() -> AsyncIterator[ChannelPair]:
                    yield ChannelPair(opened_source, adapter)

                lease = ConnectionLease(db, args.channel, name, args.lease)
                standby = Standby(channel, opened, lease, anywhere=anywhere)
                assert await group.start(standby.run) is not None, "the owner took no lease"
                standby.serve(lambda _: anyio.lowlevel.checkpoint(), lambda _: None)
            group.start_soon(pump, inlet)
            say("ready")
            await told(go)
            say(f"held {len(anywhere.book.held)}")
            if source is not None and standby is not None:
                for ref, at in source.sent.items():
                    say(f"sent {ref} {at:.6f} {stored.get(ref, 0.0):.6f}")
                source.done.set()
                standby.stop()
            say("end")
        group.cancel_scope.cancel()


# -- the coordinator ----------------------------------------------------------------------


@dataclass
class Run:
    """What the replicas of one run said."""

    ready: int = 0
    sent: dict[str, float] = field(default_factory=dict)
    stored: dict[str, float] = field(default_factory=dict)
    """ref → when the owner's store of it (its row and NOTIFY) was committed."""
    took: dict[str, tuple[float, int]] = field(default_factory=dict)
    """ref → (when it was read, by which replica)."""
    held: dict[int, int] = field(default_factory=dict)
    ended: int = 0
    writes: int = 0
    """Transactions that wrote (were given a transaction id) while the messages ran."""
    flushes: int = 0
    """The WAL's flushes to disk meanwhile (a commit waits for one)."""
    twice: int = 0
    changed: anyio.Event = field(default_factory=anyio.Event)

    def heard(self, index: int, line: str) -> None:
        word, *rest = line.split()
        if word == "ready":
            self.ready += 1
        elif word == "took":
            if rest[0] in self.took:
                self.twice += 1
            self.took[rest[0]] = (float(rest[1]), index)
        elif word == "sent":
            self.sent[rest[0]] = float(rest[1])
            self.stored[rest[0]] = float(rest[2])
        elif word == "held":
            self.held[index] = int(rest[0])
        elif word == "end":
            self.ended += 1
        self.changed.set()
        self.changed = anyio.Event()


async def listen_to(index: int, process: anyio.abc.Process, run: Run) -> None:
    assert process.stdout is not None
    lines = BufferedByteReceiveStream(process.stdout)
    while True:
        try:
            line = await lines.receive_until(b"\n", 1 << 16)
        except (anyio.EndOfStream, anyio.IncompleteRead):
            return
        run.heard(index, line.decode())


async def until(run: Run, done: Callable[[], bool], within: float) -> None:
    with anyio.fail_after(within):
        while not done():
            await run.changed.wait()


def admin(server: PostgresServer, database: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(server.url(database), autocommit=True) as conn:
        cursor = conn.execute(sql)
        return list(cursor.fetchall()) if cursor.description is not None else []


def round_trips(server: PostgresServer, database: str) -> list[tuple[int, float, str]]:
    """(calls, mean ms in the server, statement) for what was run on ``database`` since
    the last reset."""
    rows = admin(
        server,
        "postgres",
        "SELECT sum(s.calls)::bigint, sum(s.total_exec_time) / sum(s.calls), s.query"
        " FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid"
        f" WHERE d.datname = '{database}' GROUP BY s.query ORDER BY 1 DESC",
    )
    return [(int(str(calls)), float(str(ms)), str(query)) for calls, ms, query in rows]


def disk(server: PostgresServer) -> tuple[int, int]:
    """(transaction ids handed out so far, the WAL's flushes to disk so far)."""
    rows = admin(server, "postgres", "SELECT txid_current(), (SELECT wal_sync FROM pg_stat_wal)")
    return int(str(rows[0][0])), int(str(rows[0][1]))


async def listening_now(server: PostgresServer, database: str, channel: str) -> int:
    """How many replicas' drains LISTEN (the last channel each listens on)."""
    rows = await anyio.to_thread.run_sync(
        admin,
        server,
        "postgres",
        "SELECT count(*) FROM pg_stat_activity WHERE datname = "
        f"'{database}' AND query = 'LISTEN {connection_holds.channel_of(channel)}'",
    )
    return int(str(rows[0][0]))


async def replicated(
    server: PostgresServer, database: str, channel: str, replicas: int, args: argparse.Namespace
) -> tuple[Run, list[tuple[int, float, str]]]:
    url = server.url(database)
    count = int(args.rate * args.seconds)
    run = Run()
    command = [
        *(sys.executable, str(SCRIPT), "--replica-of", url, "--channel", channel),
        *("--rate", str(args.rate), "--seconds", str(args.seconds)),
        *("--conversations", str(args.conversations), "--lease", str(args.lease)),
        *("--pool", str(args.pool)),
    ]
    processes: list[anyio.abc.Process] = []
    try:
        async with anyio.create_task_group() as group:
            for index in range(replicas):
                process = await anyio.open_process(
                    [*command, "--index", str(index)], stderr=None, cwd=ROOT
                )
                processes.append(process)
                group.start_soon(listen_to, index, process, run)
            await until(run, lambda: run.ready == replicas, 60)
            with anyio.fail_after(30):  # every replica's drain LISTENs (its last LISTEN)
                while True:
                    if await listening_now(server, database, channel) >= replicas:
                        break
                    await anyio.sleep(0.05)
            # A heartbeat round more: each replica knows the others send (the spread).
            await anyio.sleep(args.lease / 3 + 0.5)
            await anyio.to_thread.run_sync(
                admin, server, "postgres", "SELECT pg_stat_statements_reset()"
            )
            before = await anyio.to_thread.run_sync(disk, server)
            assert processes[0].stdin is not None
            await processes[0].stdin.send(b"go\n")
            await until(run, lambda: len(run.took) >= count, args.seconds + 60)
            trips = await anyio.to_thread.run_sync(round_trips, server, database)
            await anyio.sleep(STATS_FLUSHED)
            after = await anyio.to_thread.run_sync(disk, server)
            run.writes = after[0] - before[0] - 1  # less the one that asked
            run.flushes = after[1] - before[1]
            for process in processes:
                assert process.stdin is not None
                await process.stdin.aclose()
            await until(run, lambda: run.ended == replicas, 30)
            for process in processes:
                with anyio.fail_after(30):
                    await process.wait()
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
    return run, trips


def figures(name: str, ms: list[float]) -> str:
    if not ms:
        return f"{name}: none"
    return (
        f"{name}: p50 {statistics.median(ms):.1f} ms, p99 {percentile(ms, 0.99):.1f} ms,"
        f" max {max(ms):.1f} ms ({len(ms)} messages)"
    )


def report(run: Run, trips: list[tuple[int, float, str]], baseline_p99: float, spread: int) -> None:
    ordered = sorted(run.sent, key=lambda ref: run.sent[ref])
    firsts = set(ordered[:spread])
    every: list[float] = []
    first: list[float] = []
    later: list[float] = []
    for ref in ordered:
        at, _ = run.took[ref]
        ms = (at - run.sent[ref]) * 1000
        every.append(ms)
        (first if ref in firsts else later).append(ms)
    print("  " + figures("all", every))
    print("  " + figures("  first of its conversation", first))
    print("  " + figures("  the conversation's later ones", later))
    storing = [(run.stored[ref] - run.sent[ref]) * 1000 for ref in ordered]
    handing = [(run.took[ref][0] - run.stored[ref]) * 1000 for ref in ordered]
    print("  " + figures("  of which the owner's store (row and NOTIFY committed)", storing))
    print("  " + figures("  of which from that commit to the pump", handing))
    print(
        f"  p99 added: {percentile(every, 0.99) - baseline_p99:.1f} ms"
        f" (later ones only: {percentile(later, 0.99) - baseline_p99:.1f} ms)"
    )
    conversations = Counter(index for _, index in run.took.values())
    print(
        "  messages taken per replica: "
        + ", ".join(f"#{i} {conversations[i]}" for i in sorted(conversations))
        + (f"; taken twice: {run.twice}" if run.twice else "")
    )
    print(
        f"  writing transactions per message: {run.writes / len(ordered):.2f},"
        f" WAL flushes per message: {run.flushes / len(ordered):.2f}"
    )
    total = sum(calls for calls, _, _ in trips)
    print(
        f"  round trips per message: {total / len(ordered):.1f} ({total} in all);"
        " the most (per message, mean ms in the server):"
    )
    for calls, ms, query in trips[:TOP]:
        text = " ".join(query.split())
        print(f"    {calls / len(ordered):5.2f} {ms:6.2f}  {text[:88]}")


def start(fast_disk: bool) -> PostgresServer:
    server = start_server()
    try:
        with psycopg.connect(server.url("postgres"), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        if fast_disk:
            server.restart()
        else:  # the test server runs without them; production does not
            make_durable(server)
        admin(server, "postgres", "CREATE EXTENSION pg_stat_statements")
    except BaseException:
        server.stop()
        raise
    return server


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--replicas", default="1,3", help="replica counts to run, e.g. 1,2,3")
    parser.add_argument("--only", default="slack,discord")
    parser.add_argument("--lease", type=float, default=4.0, help="connection_lease, seconds")
    parser.add_argument("--pool", type=int, default=10, help="each replica's pool_size")
    parser.add_argument("--fast-disk", action="store_true", help="leave fsync off")
    parser.add_argument("--replica-of", help=argparse.SUPPRESS)
    parser.add_argument("--channel", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # psycopg's notes on the connections the end cancels
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    if args.replica_of is not None:
        args.url = args.replica_of
        await replica(args)
        return
    server = start(args.fast_disk)
    try:
        runs = 0
        for channel in args.only.split(","):
            one = await direct(channel, args)
            baseline = percentile(one, 0.99) * 1000
            print(
                f"{channel}: {args.rate:g} messages a second for {args.seconds:g} s,"
                f" {args.conversations} conversations, connection_lease {args.lease:g} s"
            )
            print("  " + figures("one process (read directly)", [t * 1000 for t in one]))
            for replicas in (int(n) for n in args.replicas.split(",")):
                runs += 1
                database = f"anywhere{runs}"
                server.psql("postgres", f'CREATE DATABASE "{database}"')
                print(f" {replicas} replica process(es), turns on any replica:")
                run, trips = await replicated(server, database, channel, replicas, args)
                report(run, trips, baseline, args.conversations)
                sys.stdout.flush()
    finally:
        server.stop()


if __name__ == "__main__":
    anyio.run(main)
