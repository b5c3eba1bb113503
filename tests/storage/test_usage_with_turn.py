"""A turn's spend reaches the usage ledger in the same transaction as the turn: either
both the session's count and the principal's day have it, or neither does."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.fakes.anthropic_api import AnthropicFake, text_reply
from tests.limits.bot import MODEL, PER_CALL, limited_bot
from tests.runtime.conftest import ALICE
from tests.storage.conftest import Backend
from thalos_bot.domain.events import TokenUsage, TurnCompleted
from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId, SessionId
from thalos_bot.domain.messages import Message, TextBlock
from thalos_bot.domain.pricing import ModelPrice, ModelUsages
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.protocol import (
    OutboxAddress,
    OutboxEntry,
    SessionRecord,
    SessionStore,
    Spend,
)
from thalos_bot.storage.usage import DayUsage, SqliteUsageLedger

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SID = SessionId("s_usage")
DAY = "2026-12-01"
SPEND = Spend("alice", DAY, TokenUsage(12, 7), 0.25)


def _turn() -> list[Message]:
    return [Message.user("question"), Message("assistant", (TextBlock("The answer."),))]


def _entry(key: str) -> OutboxEntry:
    return OutboxEntry(OutboxAddress(ChannelId("telegram"), ConversationId("42"), key), "x")


async def _session(store: SessionStore) -> None:
    await store.create(SessionRecord(SID, AgentId("helper"), "alice", "open", T0, T0))


async def test_a_committed_turn_adds_its_spend_to_the_day(backend: Backend) -> None:
    sessions, ledger = backend.sessions, backend.ledger
    await _session(sessions)
    await sessions.commit_turn(SID, _turn(), SPEND.usage, T0, spend=SPEND)
    await sessions.commit_turn(SID, _turn(), SPEND.usage, T0, spend=SPEND)
    record = await sessions.get(SID)
    assert record is not None
    assert record.usage == TokenUsage(24, 14)
    assert await ledger.day("alice", DAY) == DayUsage(TokenUsage(24, 14), 0.5, 2)


async def test_a_turn_that_cannot_commit_adds_nothing_to_the_day(backend: Backend) -> None:
    sessions, ledger = backend.sessions, backend.ledger
    await _session(sessions)
    await sessions.commit_turn(SID, _turn(), SPEND.usage, T0, outbox=_entry("k1"), spend=SPEND)
    # The outbox row fails after the messages, the session's count and the spend were
    # written: the whole transaction goes, the day's spend with it.
    with pytest.raises(Exception, match=backend.duplicate):
        await sessions.commit_turn(SID, _turn(), SPEND.usage, T0, outbox=_entry("k1"), spend=SPEND)
    record = await sessions.get(SID)
    assert record is not None
    assert (record.turns, record.usage) == (1, SPEND.usage)
    assert await ledger.day("alice", DAY) == DayUsage(SPEND.usage, 0.25, 1)


async def test_a_ledger_that_cannot_be_written_keeps_the_turn_out_too(backend: Backend) -> None:
    sessions, ledger = backend.sessions, backend.ledger
    await _session(sessions)
    await backend.refuse_usage()  # the day's row refuses every write
    with pytest.raises(Exception, match="usage refused"):
        await sessions.commit_turn(SID, _turn(), SPEND.usage, T0, spend=SPEND)
    record = await sessions.get(SID)
    assert record is not None
    assert (record.turns, record.usage) == (0, TokenUsage())
    assert await sessions.history(SID) == []
    assert await ledger.day("alice", DAY) == DayUsage()


async def test_the_memory_store_adds_the_spend_to_its_ledger() -> None:
    sessions = MemorySessionStore()
    await _session(sessions)
    await sessions.commit_turn(SID, _turn(), SPEND.usage, T0, spend=SPEND)
    assert await sessions.ledger.day("alice", DAY) == DayUsage(SPEND.usage, 0.25, 1)


class CrashingLedger:
    """A ledger whose own writes never land: what a crash right after the turn's commit
    left behind, when the day was written in a transaction of its own."""

    def __init__(self, real: SqliteUsageLedger) -> None:
        self.real = real

    async def add(self, principal: str, day: str, usage: TokenUsage, cost_usd: float) -> None:
        raise OSError("the process died here")

    async def day(self, principal: str, day: str) -> DayUsage:
        return await self.real.day(principal, day)

    async def session_models(self, session: str) -> ModelUsages:
        return await self.real.session_models(session)

    async def first_alert(self, principal: str, day: str, level: int) -> bool:
        return await self.real.first_alert(principal, day, level)

    async def alerted(self, principal: str, day: str, level: int) -> bool:
        return await self.real.alerted(principal, day, level)

    async def days(
        self, first: str, last: str, principal: str | None = None
    ) -> dict[str, DayUsage]:
        return await self.real.days(first, last, principal)

    async def record(self, spend: Spend) -> None:
        raise OSError("the process died here")

    async def agent_span(self, agent: str, first: str, last: str) -> DayUsage:
        return await self.real.agent_span(agent, first, last)


async def test_the_runtime_stores_the_day_with_the_turn_not_after_it(tmp_path: Path) -> None:
    with AnthropicFake() as fake:
        fake.enqueue(text_reply("one"))
        prices = {MODEL: ModelPrice(1_000_000, 1_000_000, 0, 0)}  # $1 a token
        async with limited_bot(tmp_path / "t.db", fake, prices=prices) as bot:
            bot.limits.ledger = CrashingLedger(bot.ledger)
            session = (await bot.runtime.create_session("helper", ALICE)).id
            events = await bot.say(ALICE, "hello", session)
            assert isinstance(events[-1], TurnCompleted)
            record = await bot.runtime.store.get(session)
            day = await bot.ledger.day(ALICE.id, bot.limits.today())
    assert record is not None
    assert record.usage.total == PER_CALL
    assert day.usage == record.usage
    assert (day.turns, day.cost_usd) == (1, float(PER_CALL))
