"""A fallback member's tokens are priced as its own model, not the agent's first: in the
day's ledger written with the turn, and in the limit checked after each model round.

The daemon's wiring (``bot.toml`` → routes, limits) over the Anthropic fake answering 529
and the OpenAI-compatible fake answering, differently priced."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import anthropic_api as claude
from tests.fakes import openai_api as compat
from tests.fakes.anthropic_api import AnthropicFake, FakeUsage
from tests.fakes.openai_api import OpenAIFake
from tests.provider_pair import pair_runtime, providers_toml
from tests.runtime.conftest import ALICE
from thalos_bot.config.models import Settings
from thalos_bot.domain.events import Info, TokenUsage, TurnCompleted
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.pricing import ModelPrice, ModelUsages, PriceTable
from thalos_bot.runtime.limits import LIMIT_REACHED, Spending, SpendingLimits
from thalos_bot.runtime.protocol import TurnRequest, TurnResult
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.protocol import SessionRecord
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.storage.usage import DayUsage, SqliteUsageLedger

pytestmark = pytest.mark.anyio
T0 = datetime(2026, 12, 1, 12, tzinfo=UTC)

CLOUD = (3.0, 15.0)
"""USD per million input and output tokens on the agent's first model."""
LOCAL = (0.5, 1.0)
"""On its fallback: six times cheaper for input, fifteen for output."""
LOCAL_USAGE = FakeUsage(input_tokens=1_000, output_tokens=100)
CLOUD_USAGE = FakeUsage(input_tokens=2_000, output_tokens=50)


def cost(price: tuple[float, float], usage: FakeUsage) -> float:
    return (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-real")


def config(
    anthropic: AnthropicFake,
    local: OpenAIFake,
    daily_cost_usd: float | None = 10.0,
    *,
    local_priced: bool = True,
) -> Settings:
    limit = "" if daily_cost_usd is None else f"daily_cost_usd = {daily_cost_usd}"
    local_price = (
        f'[limits.prices."{local.model.name}"]\ninput = {LOCAL[0]}\noutput = {LOCAL[1]}'
        if local_priced
        else ""
    )
    pair = providers_toml(anthropic, local, claude_model="claude-fake-1", home=False)
    text = f"""{pair}
[limits]
{limit}

[limits.prices."claude-fake-1"]
input = {CLOUD[0]}
output = {CLOUD[1]}

{local_price}
"""
    return Settings.model_validate(tomllib.loads(text))


async def one_turn(tmp_path: Path, settings: Settings) -> tuple[TurnResult, DayUsage]:
    results, spent = await turns(tmp_path, settings, 1)
    return results[0], spent.today


async def turns(
    tmp_path: Path, settings: Settings, count: int
) -> tuple[list[TurnResult], Spending]:
    """``count`` turns in one session, then what /status would say it spent."""
    async with pair_runtime(tmp_path, settings, limits=True) as (runtime, _tools, _db):
        session = await runtime.create_session("cloud", ALICE)
        results = [
            await runtime.run_turn(TurnRequest(session.id, ALICE, f"What is {n}?"))
            for n in range(count)
        ]
        info = await runtime.session_info(session.id)
        assert info is not None
        spent = await runtime.spending(info)
    assert spent is not None
    return results, spent


def tool_round(usage: FakeUsage) -> Any:
    return compat.reply(
        compat.text("Let me check."), compat.tool_call("t__echo", {"n": 1}), usage=usage
    )


async def test_a_fallback_answer_is_priced_as_the_model_that_gave_it(
    tmp_path: Path, provider_fakes: tuple[AnthropicFake, OpenAIFake]
) -> None:
    anthropic, local = provider_fakes
    anthropic.enqueue(claude.overloaded())
    local.enqueue(compat.reply(compat.text("It is one."), usage=LOCAL_USAGE))
    result, day = await one_turn(tmp_path, config(anthropic, local))
    assert isinstance(result.terminal, TurnCompleted), result.terminal
    assert len(anthropic.requests) == 1
    assert day.usage == TokenUsage(LOCAL_USAGE.input_tokens, LOCAL_USAGE.output_tokens)
    assert day.cost_usd == pytest.approx(cost(LOCAL, LOCAL_USAGE))
    assert day.cost_usd != pytest.approx(cost(CLOUD, LOCAL_USAGE))


async def test_each_model_call_of_a_turn_is_priced_as_its_own_model(
    tmp_path: Path, provider_fakes: tuple[AnthropicFake, OpenAIFake]
) -> None:
    """Claude answers the first call (a tool round); the second call falls back."""
    anthropic, local = provider_fakes
    anthropic.enqueue(
        claude.reply(
            claude.text("Let me check."), claude.tool_use("t__echo", {"n": 1}), usage=CLOUD_USAGE
        ),
        claude.overloaded(),
    )
    local.enqueue(compat.reply(compat.text("It is one."), usage=LOCAL_USAGE))
    result, day = await one_turn(tmp_path, config(anthropic, local))
    assert isinstance(result.terminal, TurnCompleted), result.terminal
    assert (len(anthropic.requests), len(local.completions)) == (2, 1)
    assert day.usage.total == result.terminal.usage.total
    assert day.cost_usd == pytest.approx(cost(CLOUD, CLOUD_USAGE) + cost(LOCAL, LOCAL_USAGE))


async def test_the_limit_checked_mid_turn_prices_the_fallback_model(
    tmp_path: Path, provider_fakes: tuple[AnthropicFake, OpenAIFake]
) -> None:
    """The first round's tokens cost less than the daily limit on the model that answered
    (and more on the agent's first model): the turn goes on to run its tool."""
    anthropic, local = provider_fakes
    limit = 0.001
    assert cost(LOCAL, LOCAL_USAGE) < limit <= cost(CLOUD, LOCAL_USAGE)
    anthropic.enqueue(claude.overloaded(), claude.overloaded())
    local.enqueue(tool_round(LOCAL_USAGE), compat.reply(compat.text("It is one.")))
    result, _ = await one_turn(tmp_path, config(anthropic, local, daily_cost_usd=limit))
    assert isinstance(result.terminal, TurnCompleted), result.terminal
    stops = [e for e in result.events if isinstance(e, Info) and e.name == LIMIT_REACHED]
    assert not stops, stops[0].data if stops else None
    assert result.text == "Let me check.\n\nIt is one."
    assert len(local.completions) == 2


async def test_status_prices_the_session_per_model_across_its_turns(
    tmp_path: Path, provider_fakes: tuple[AnthropicFake, OpenAIFake]
) -> None:
    """The first turn falls back, the second is Claude's: the session's cost in /status
    is each turn at its own price (not the session's tokens at Claude's), as is the day's."""
    anthropic, local = provider_fakes
    anthropic.enqueue(claude.overloaded(), claude.text_reply("Two.", usage=CLOUD_USAGE))
    local.enqueue(compat.reply(compat.text("One."), usage=LOCAL_USAGE))
    results, spent = await turns(tmp_path, config(anthropic, local), 2)
    assert [r.text for r in results] == ["One.", "Two."]
    expected = cost(LOCAL, LOCAL_USAGE) + cost(CLOUD, CLOUD_USAGE)
    assert spent.session_cost == pytest.approx(expected)
    assert spent.today.cost_usd == pytest.approx(expected)


async def test_an_unpriced_fallback_makes_the_session_cost_unknown_and_adds_nothing(
    tmp_path: Path, provider_fakes: tuple[AnthropicFake, OpenAIFake]
) -> None:
    """No price for the local model (allowed with no daily cost limit): /status says the
    session's cost is unknown rather than pricing its tokens as Claude's, and the day counts
    only Claude's tokens in its cost."""
    anthropic, local = provider_fakes
    anthropic.enqueue(claude.overloaded(), claude.text_reply("Two.", usage=CLOUD_USAGE))
    local.enqueue(compat.reply(compat.text("One."), usage=LOCAL_USAGE))
    settings = config(anthropic, local, daily_cost_usd=None, local_priced=False)
    _, spent = await turns(tmp_path, settings, 2)
    assert spent.session_cost is None
    assert spent.today.cost_usd == pytest.approx(cost(CLOUD, CLOUD_USAGE))


async def test_session_tokens_kept_before_the_ledger_had_models_are_priced_as_the_first(
    tmp_path: Path,
) -> None:
    """A session stored before migration 0611 (or with no limits) has tokens the ledger
    holds no model for: those are priced as the agent's first model, the rest per model."""
    db = await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS)
    try:
        store = SqliteSessionStore(db)
        prices = PriceTable({"cloud": ModelPrice(*CLOUD, 0, 0), "local": ModelPrice(*LOCAL, 0, 0)})
        limits = SpendingLimits(SqliteUsageLedger(db), prices)
        await store.create(
            SessionRecord(SessionId("s1"), AgentId("cloud"), ALICE.id, "open", T0, T0)
        )
        before = TokenUsage(CLOUD_USAGE.input_tokens, CLOUD_USAGE.output_tokens)
        await store.commit_turn(SessionId("s1"), [], before, T0)  # no spend: no model kept
        fallback = TokenUsage(LOCAL_USAGE.input_tokens, LOCAL_USAGE.output_tokens)
        spend = limits.spend(ALICE.id, ModelUsages().add("local", fallback), "s1")
        await store.commit_turn(SessionId("s1"), [], fallback, T0, spend=spend)
        record = await store.get(SessionId("s1"))
        assert record is not None
        spent = await limits.spending(ALICE.id, "s1", record.usage, "cloud")
    finally:
        await db.aclose()
    assert spent.session == before + fallback
    assert spent.session_cost == pytest.approx(cost(CLOUD, CLOUD_USAGE) + cost(LOCAL, LOCAL_USAGE))
    assert spent.today.cost_usd == pytest.approx(cost(LOCAL, LOCAL_USAGE))
