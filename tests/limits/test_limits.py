"""Each spending limit, over the real SDK and the strict fake: a turn past a limit is
refused before the model is called (the fake sees no request) with a notice naming the
limit and when it resets; a limit reached mid-turn ends the turn after that round."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.fakes.anthropic_api import AnthropicFake, text_reply, tool_use_reply
from tests.limits.bot import MODEL, PER_CALL, limited_bot, refusal
from tests.pump.harness import ManualClock
from tests.runtime.conftest import ALICE, RecordingTools
from thalos_bot.domain.events import Info, TokenUsage, ToolCallFinished, TurnCompleted
from thalos_bot.domain.pricing import ModelPrice
from thalos_bot.domain.security import SecurityContext
from thalos_bot.storage.database import Database
from thalos_bot.storage.usage import USAGE_MIGRATIONS, SqliteUsageLedger

pytestmark = pytest.mark.anyio

BOB = SecurityContext.of("bob", ["user"])


def at(hour: int, minute: int = 0, day: int = 1) -> ManualClock:
    clock = ManualClock()
    clock.now = datetime(2026, 12, day, hour, minute, tzinfo=UTC)
    return clock


async def test_a_session_past_session_tokens_is_refused_before_the_model_is_called(
    tmp_path: Path,
) -> None:
    with AnthropicFake() as fake:
        fake.enqueue(text_reply("one"), text_reply("fresh"))
        async with limited_bot(tmp_path / "t.db", fake, session_tokens=PER_CALL) as bot:
            session = (await bot.runtime.create_session("helper", ALICE)).id
            first = await bot.say(ALICE, "hello", session)
            refused = await bot.say(ALICE, "again", session)
            assert len(fake.requests) == 1
            fresh = await bot.say(ALICE, "hello in a new session")
        assert isinstance(first[-1], TurnCompleted)
        assert refusal(refused) == (
            "This session has used 19 tokens, and its limit is 19 (limits.session_tokens). "
            "Send /new to start a new session."
        )
        assert isinstance(fresh[-1], TurnCompleted)
        assert len(fake.requests) == 2


async def test_daily_tokens_count_every_session_of_a_principal_and_reset_at_midnight_utc(
    tmp_path: Path,
) -> None:
    clock = at(21, 30)
    with AnthropicFake() as fake:
        fake.enqueue(text_reply("a"), text_reply("bob's"), text_reply("next day"))
        async with limited_bot(tmp_path / "t.db", fake, daily_tokens=PER_CALL, clock=clock) as bot:
            await bot.say(ALICE, "first session")
            refused = await bot.say(ALICE, "a second session, same day")
            assert len(fake.requests) == 1
            other = await bot.say(BOB, "someone else")
            clock.advance(hours=2, minutes=31)
            tomorrow = await bot.say(ALICE, "after midnight")
        assert refusal(refused) == (
            "You have used 19 tokens today, and the daily limit is 19 (limits.daily_tokens). "
            "It resets at midnight UTC, in 2h 30m."
        )
        assert isinstance(other[-1], TurnCompleted)
        assert isinstance(tomorrow[-1], TurnCompleted)
        assert len(fake.requests) == 3


async def test_the_day_is_the_configured_time_zones(tmp_path: Path) -> None:
    clock = at(22, 30)  # 23:30 in Berlin
    with AnthropicFake() as fake:
        fake.enqueue(text_reply("a"), text_reply("b"))
        async with limited_bot(
            tmp_path / "t.db", fake, daily_tokens=PER_CALL, timezone="Europe/Berlin", clock=clock
        ) as bot:
            await bot.say(ALICE, "late")
            refused = await bot.say(ALICE, "later")
            clock.advance(minutes=31)  # past midnight in Berlin, still 1 December in UTC
            allowed = await bot.say(ALICE, "a new Berlin day")
        assert refusal(refused).endswith("It resets at midnight Europe/Berlin, in 30m.")
        assert isinstance(allowed[-1], TurnCompleted)
        assert len(fake.requests) == 2


async def test_daily_cost_uses_the_price_table_and_refuses_once_reached(tmp_path: Path) -> None:
    prices = {MODEL: ModelPrice(input=500.0, output=1000.0, cache_read=0.0, cache_write=0.0)}
    with AnthropicFake() as fake:
        fake.enqueue(text_reply("costly"))
        async with limited_bot(
            tmp_path / "t.db", fake, daily_cost_usd=0.01, prices=prices, clock=at(12)
        ) as bot:
            await bot.say(ALICE, "hello")
            refused = await bot.say(ALICE, "again")
            day = await bot.ledger.day("alice", "2026-12-01")
        # 12 input tokens at $500/MTok + 7 output tokens at $1000/MTok
        assert day.cost_usd == pytest.approx(0.013)
        assert day.usage.total == PER_CALL
        assert refusal(refused) == (
            "Today's estimated cost is $0.01, and the daily limit is $0.01 "
            "(limits.daily_cost_usd). It resets at midnight UTC, in 12h."
        )
        assert len(fake.requests) == 1


async def test_a_limit_reached_mid_turn_ends_it_after_that_round(tmp_path: Path) -> None:
    tools = RecordingTools({"lookup": lambda args: _found()})
    clock = at(20)
    with AnthropicFake() as fake:
        fake.enqueue(
            tool_use_reply("lookup", {"q": "a"}, id="toolu_1", text_before="Let me look."),
            tool_use_reply("lookup", {"q": "b"}, id="toolu_2", text_before="One more."),
        )
        async with limited_bot(
            tmp_path / "t.db", fake, daily_tokens=2 * PER_CALL, tools=tools, clock=clock
        ) as bot:
            session = (await bot.runtime.create_session("helper", ALICE)).id
            events = await bot.say(ALICE, "find it", session)
            assert len(fake.requests) == 2
            # The next day the same session goes on, from a history the API accepts.
            clock.advance(days=1)
            fake.enqueue(text_reply("Here is what I found."))
            after = await bot.say(ALICE, "go on", session)
        assert not fake.refusals
        assert len(fake.requests) == 3
    assert [c.arguments for c in tools.calls] == [{"q": "a"}]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.outcome for e in finished] == ["ok", "refused"]
    (notice,) = [e for e in events if isinstance(e, Info) and e.name == "limit-reached"]
    assert notice.data["limit"] == "daily_tokens"
    assert notice.data["notice"] == (
        "You have used 38 tokens today, and the daily limit is 38 (limits.daily_tokens). "
        "It resets at midnight UTC, in 4h."
    )
    terminal = events[-1]
    assert isinstance(terminal, TurnCompleted)
    assert terminal.text == "Let me look.\n\nOne more."
    assert isinstance(after[-1], TurnCompleted)


async def _found() -> str:
    return "found it"


async def test_the_ledger_keeps_a_day_across_restarts(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    db = await Database.open(path, migrations=USAGE_MIGRATIONS)
    await SqliteUsageLedger(db).add("alice", "2026-12-01", TokenUsage(10, 5), 0.5)
    await SqliteUsageLedger(db).add("alice", "2026-12-01", TokenUsage(1, 1, 2, 3), 0.25)
    await db.aclose()
    db = await Database.open(path, migrations=USAGE_MIGRATIONS)
    try:
        day = await SqliteUsageLedger(db).day("alice", "2026-12-01")
        other = await SqliteUsageLedger(db).day("alice", "2026-12-02")
    finally:
        await db.aclose()
    assert (day.usage, day.cost_usd, day.turns) == (TokenUsage(11, 6, 2, 3), 0.75, 2)
    assert other.turns == 0
