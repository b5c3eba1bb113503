"""The outbox's delivery side: the seam for detached results, the pump's hand-over,
redelivery at start-up with what the channel noted, pruning."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from thalos_bot.channels.final import DeliveryJournal
from thalos_bot.channels.ports import Delivery, Notice
from thalos_bot.domain.events import TokenUsage, TurnCompleted
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.service.outbox import Outbox
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.outbox import SqliteOutbox
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
CONSOLE, TG = ChannelId("console"), ChannelId("telegram")
CHAT = ConversationId("42")


@dataclass
class PlainAdapter:
    """Like the console: shows what it is given at once, confirms nothing."""

    channel_id: ChannelId = CONSOLE
    shown: list[tuple[ConversationId, Delivery]] = field(default_factory=list)

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        self.shown.append((conversation_id, event))


@dataclass
class ConfirmingFake:
    """A channel that confirms when told to, and resumes from the journal's progress."""

    channel_id: ChannelId = TG
    queued: list[tuple[str, DeliveryJournal, bool, Mapping[str, object]]] = field(
        default_factory=list
    )
    arrived: anyio.Event = field(default_factory=anyio.Event)

    async def deliver(self, conversation_id: ConversationId, event: Delivery) -> None:
        raise AssertionError("finals go through deliver_final")

    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        self.queued.append((text, journal, ends_turn, dict(journal.progress)))
        self.arrived.set()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as opened:
        yield opened


def _outbox(db: Database, *adapters: PlainAdapter | ConfirmingFake, keep: float = 86400) -> Outbox:
    return Outbox(
        SqliteOutbox(db), {a.channel_id: a for a in adapters}, keep=keep, clock=lambda: NOW
    )


async def _states(db: Database) -> list[tuple[str, str]]:
    async with db.read() as conn:
        cursor = await conn.execute("SELECT text, state FROM outbox ORDER BY created_at, rowid")
        return [(row[0], row[1]) for row in await cursor.fetchall()]


async def test_a_detached_result_reaches_a_plain_channel_and_is_marked(db: Database) -> None:
    console = PlainAdapter()
    async with _outbox(db, console).running() as outbox:
        await outbox.deliver(CONSOLE, CHAT, "Your reminder: water the plants.", kind="answer")
        await outbox.deliver(CONSOLE, CHAT, "The 9:00 job failed.", kind="notice")
    # Leaving `running` lets the worker finish what it was given.
    assert console.shown == [
        (CHAT, Notice("Your reminder: water the plants.", "info")),
        (CHAT, Notice("The 9:00 job failed.", "warning")),
    ]
    assert await _states(db) == [
        ("Your reminder: water the plants.", "delivered"),
        ("The 9:00 job failed.", "delivered"),
    ]


async def test_a_confirming_channel_marks_the_row_itself(db: Database) -> None:
    telegram = ConfirmingFake()
    async with _outbox(db, telegram).running() as outbox:
        await outbox.deliver(TG, CHAT, "Good morning.", kind="answer")
        with anyio.fail_after(5):
            await telegram.arrived.wait()
        (text, journal, ends_turn, _) = telegram.queued[0]
        assert (text, ends_turn) == ("Good morning.", False)
        assert await _states(db) == [("Good morning.", "pending")]  # not confirmed yet
        await journal.save({"parts_done": 0, "floor": 17, "fields": {"text": "Good morning."}})
        await journal.confirm()
    assert await _states(db) == [("Good morning.", "delivered")]


async def test_rows_left_pending_are_redelivered_with_their_progress(db: Database) -> None:
    store = SqliteOutbox(db)
    address = OutboxAddress(TG, CHAT, "out-1")
    await store.add(OutboxEntry(address, "Half sent."), NOW)
    await store.save_progress("out-1", {"parts_done": 1, "floor": 5}, NOW)
    await store.add(OutboxEntry(OutboxAddress(TG, CHAT, "out-2"), "Done before."), NOW)
    await store.finish("out-2", "delivered", NOW)
    telegram = ConfirmingFake()
    with capture_logs() as logs:
        async with _outbox(db, telegram).running():
            # Handed back before `running` yields: before the pump reads any message.
            assert [(q[0], q[3]) for q in telegram.queued] == [
                ("Half sent.", {"parts_done": 1, "floor": 5})
            ]
            await telegram.queued[0][1].confirm()
    assert {"event": "outbox_redelivering", "channel": TG, "rows": 1, "log_level": "info"} in logs
    assert await _states(db) == [("Half sent.", "delivered"), ("Done before.", "delivered")]


async def test_the_pump_hands_over_a_live_final(db: Database) -> None:
    console, telegram = PlainAdapter(), ConfirmingFake()
    terminal = TurnCompleted(SessionId("s1"), "The answer.", TokenUsage(), (), 0.1)
    async with _outbox(db, console, telegram).running() as outbox:
        missing = outbox.address(CONSOLE, CHAT)
        assert not await outbox.hand_over(missing.key, terminal, console)  # no row: not taken
        for channel in (CONSOLE, TG):
            address = outbox.address(channel, CHAT)
            await SqliteOutbox(db).add(OutboxEntry(address, "The answer."), NOW)
            adapter = console if channel == CONSOLE else telegram
            assert await outbox.hand_over(address.key, terminal, adapter)
        assert console.shown == [(CHAT, terminal)]
        assert [(q[0], q[2]) for q in telegram.queued] == [("The answer.", True)]
    # The console counts as confirmed once shown; Telegram waits for its confirmation.
    assert await _states(db) == [("The answer.", "delivered"), ("The answer.", "pending")]


async def test_done_rows_are_pruned_after_keep(db: Database) -> None:
    store = SqliteOutbox(db)
    for key, done_at in (("old", NOW - timedelta(days=8)), ("new", NOW - timedelta(days=6))):
        await store.add(OutboxEntry(OutboxAddress(CONSOLE, CHAT, key), key), done_at)
        await store.finish(key, "delivered", done_at)
    async with _outbox(db, PlainAdapter(), keep=7 * 86400).running():
        pass
    assert await _states(db) == [("new", "delivered")]
