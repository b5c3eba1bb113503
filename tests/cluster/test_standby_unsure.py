"""A message a connection's owner receives while it is unsure of its lease (its own
clock says a renewal is overdue: a stall, a loaded machine) is not handed on from there,
and not dropped either: it is stored in the shared inbox, waiting, and the replica that
owns the connection next (here the same one, once it is sure again) hands it on, once.

Before, it was dropped on the assumption that the next owner's connection receives it
too; but Slack counts an envelope delivered once its listener returned (and Discord's
catch-up mark had moved on), so under load a message was lost. On a real PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio
import psycopg
import pytest
from anyio.streams.memory import MemoryObjectSendStream

from tests.waits import until
from thalos_bot.channels.ports import InboundMessage, Sender
from thalos_bot.channels.registry import ChannelPair
from thalos_bot.cluster.connection_inbox import ConnectionInbox
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.service.standby import Standby
from thalos_bot.storage.pg.database import PgDatabase

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]
CHANNEL = ChannelId("unsure")


def message(text: str) -> InboundMessage:
    return InboundMessage(
        CHANNEL,
        ConversationId("D1"),
        Sender(SecurityContext.of("owner", ["admin"]), "Owner", "U1"),
        text,
        datetime(2026, 12, 6, 3, 0, tzinfo=UTC),
        message_ref=f"ref-{text}",
    )


class Connection:
    """Each opening a connection of its own, receiving what :meth:`say` gives it (as a
    platform counts it delivered once handed over) until it is closed."""

    def __init__(self) -> None:
        self.send: MemoryObjectSendStream[InboundMessage] | None = None
        self.opened = anyio.Event()

    async def say(self, text: str) -> None:
        with anyio.fail_after(10):
            while self.send is None:
                await anyio.sleep(0.02)
            await self.send.send(message(text))

    @asynccontextmanager
    async def open(self) -> AsyncIterator[ChannelPair]:
        send, receive = anyio.create_memory_object_stream[InboundMessage](10)

        async def messages() -> AsyncIterator[InboundMessage]:
            async with receive:
                async for item in receive:
                    yield item

        source: Any = type(
            "Source", (), {"channel_id": CHANNEL, "messages": staticmethod(messages)}
        )
        self.send = send
        self.opened.set()
        try:
            yield ChannelPair(source, object())  # type: ignore[arg-type]
        finally:
            self.send = None
            send.close()


@asynccontextmanager
async def serving(standby: Standby, connection: Connection) -> AsyncIterator[list[str]]:
    """The standby holding the connection, and a pump reading it: what the pump took,
    once a first message ("before") went through; the standby stopped at the end."""
    pumped: list[str] = []

    async def pump() -> None:
        async for item in standby.source.messages():
            if isinstance(item, InboundMessage):
                pumped.append(item.text)
                if item.handled is not None:
                    item.handled.set()

    async def attach(pair: ChannelPair) -> None:
        return None

    with anyio.fail_after(50):
        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            standby.serve(attach, lambda pair: None)
            assert await group.start(standby.run) is not None
            await connection.say("before")
            await until(lambda: pumped == ["before"], 20, 0.02)
            yield pumped
            standby.stop()


async def kept_for_the_next_owner(
    connection: Connection, pumped: list[str], monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """``text`` said while the owner is unsure of its lease: not handed on from there;
    once sure again (it owns the connection next), handed on once."""
    await connection.say(text)
    await anyio.sleep(1.5)
    assert pumped == ["before"], "handed on while unsure of the lease"
    monkeypatch.undo()
    await until(lambda: text in pumped, 20, 0.02)
    await anyio.sleep(1.0)
    assert pumped == ["before", text]


async def test_a_message_received_while_unsure_of_the_lease_is_kept_for_the_next_owner(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as db:
        lease = ConnectionLease(db, str(CHANNEL), "r1", 1.0)
        connection = Connection()
        standby = Standby(CHANNEL, connection.open, lease, ConnectionInbox(db, lease))
        async with serving(standby, connection) as pumped:
            monkeypatch.setattr(lease, "fresh", lambda: False)  # its clock: maybe gone
            await kept_for_the_next_owner(connection, pumped, monkeypatch, "unsure")


async def test_a_store_cut_by_a_stall_past_the_lease_hands_nothing_on_from_there(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner stopped while it stored a message: the server ended that transaction
    (``idle_in_transaction_session_timeout``), and the process, awake, has the store's
    error and a lease it is no longer sure of. The message is not run from there (the
    next owner may run it too): it is stored for the next owner, once."""
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as db:
        lease = ConnectionLease(db, str(CHANNEL), "r1", 1.0)
        connection = Connection()
        inbox = ConnectionInbox(db, lease)
        standby = Standby(CHANNEL, connection.open, lease, inbox)
        stores = ("put", "put_taken")  # waiting, or taken at once when nothing waits
        originals = {name: getattr(inbox, name) for name in stores}

        async def stalled(*args: Any) -> bool:
            monkeypatch.setattr(lease, "fresh", lambda: False)  # it woke up past the lease
            for name, method in originals.items():
                monkeypatch.setattr(inbox, name, method)
            raise psycopg.OperationalError("terminating connection due to idle-in-transaction")

        async with serving(standby, connection) as pumped:
            for name in stores:
                monkeypatch.setattr(inbox, name, stalled)
            await kept_for_the_next_owner(connection, pumped, monkeypatch, "stalled")
