"""/status shows tokens and estimated cost for the session and for today."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from tests.pump.harness import CATALOG, CHANNEL, FakeSource, ManualClock, RecordingAdapter
from thalos_bot.channels import notices
from thalos_bot.config.models import PumpSettings
from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import Info
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.pricing import ModelPrice, PriceTable
from thalos_bot.providers.scripted import Say, ScriptedProvider
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.runtime.limits import SpendingLimits
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.memory_sessions import MemorySessionStore

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def pump(
    model: str, prices: PriceTable
) -> AsyncIterator[tuple[FakeSource, RecordingAdapter]]:
    clock = ManualClock()
    store = MemorySessionStore()
    limits = SpendingLimits(store.ledger, prices, clock=clock)
    source, adapter = FakeSource(), RecordingAdapter()
    provider = ScriptedProvider([[Say("ok")], [Say("ok again")]])
    async with Runtime(
        catalog=CATALOG,
        store=store,
        provider=provider,
        settings=RuntimeSettings(model=model),
        clock=clock,
        limits=limits,
    ) as runtime:
        channel_pump = ChannelPump(
            runtime=runtime,
            catalog=CATALOG,
            conversations=MemoryConversationMap(),
            adapters={CHANNEL: adapter},
            settings=PumpSettings(flush_interval=0.05),
            clock=clock,
            spending=runtime.spending,
        )
        async with anyio.create_task_group() as group:
            group.start_soon(channel_pump.run, [source])
            try:
                yield source, adapter
            finally:
                source.close()


def spent_lines(status: str) -> list[str]:
    return [line for line in status.splitlines() if line.startswith("Spent")]


async def test_status_shows_session_and_today_tokens_with_estimated_cost() -> None:
    prices = PriceTable({"m": ModelPrice(100_000.0, 200_000.0, 0.0, 0.0)})
    async with pump("m", prices) as (source, adapter):
        await source.send("hello").wait()
        await source.send("/status").wait()
        await source.send("/new").wait()
        await source.send("hello again").wait()
        await source.send("/status").wait()
    first, *_, second = [n for n in adapter.notices() if n.startswith("Agent:")]
    (session, today) = spent_lines(first)
    assert session.startswith("Spent this session: ")
    assert "tokens, about $" in session
    assert today.startswith("Spent today (UTC): ")
    tokens = int(session.split(": ")[1].split(" ")[0].replace(",", ""))
    assert tokens > 0
    assert today.split(": ")[1] == session.split(": ")[1]
    (session2, today2) = spent_lines(second)
    tokens2 = int(session2.split(": ")[1].split(" ")[0].replace(",", ""))
    day_tokens = int(today2.split(": ")[1].split(" ")[0].replace(",", ""))
    assert day_tokens == tokens + tokens2


async def test_status_says_when_the_model_has_no_price() -> None:
    async with pump("unpriced", PriceTable({})) as (source, adapter):
        await source.send("hello").wait()
        await source.send("/status").wait()
    (status,) = [n for n in adapter.notices() if n.startswith("Agent:")]
    session, today = spent_lines(status)
    assert session.endswith("tokens, cost unknown (no price for its model)")
    assert today.endswith("tokens, $0.00")


def test_the_spending_lines_read_well() -> None:
    assert notices.spending(12_345, 0.0421, 56_789, 0.2, "Europe/Berlin") == [
        "Spent this session: 12,345 tokens, about $0.04",
        "Spent today (Europe/Berlin): 56,789 tokens, about $0.20",
    ]
    assert notices.spending(10, 0.0004, 10, 0.0004, "UTC")[0].endswith("under $0.01")
    with_limits = notices.spending(1, 0.0, 56_789, 0.2, "UTC", daily_tokens=100_000, daily_cost=2.0)
    assert with_limits[1] == "Spent today (UTC): 56,789 of 100,000 tokens, about $0.20 of $2.00"


def test_a_limit_reached_mid_turn_is_said_as_a_notice() -> None:
    event = Info(SessionId("s"), "limit-reached", {"limit": "daily_tokens", "notice": "Stop."})
    assert notices.from_info(event) == "[limit] Stop."
    error = AgentError(ErrorCode.LIMIT_REACHED, "Over.")
    assert notices.turn_failed(error) == "[limit] Over."
