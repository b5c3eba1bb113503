"""A runtime with spending limits over the real Anthropic SDK, the strict fake, SQLite
and a clock the test moves."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_api import AnthropicFake
from tests.pump.harness import ManualClock
from tests.runtime.conftest import make_catalog
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.domain.events import AgentEvent, TurnFailed
from thalos_bot.domain.pricing import ModelPrice, PriceTable
from thalos_bot.domain.security import SecurityContext
from thalos_bot.providers.anthropic import AnthropicProvider
from thalos_bot.runtime.limits import SpendingLimits
from thalos_bot.runtime.protocol import TurnRequest
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.storage.usage import SqliteUsageLedger
from thalos_bot.tools.types import ToolCatalog

MODEL = "claude-test"
PER_CALL = 19
"""Tokens the fake reports for each model call (12 in, 7 out)."""


@dataclass(slots=True)
class Bot:
    runtime: Runtime
    ledger: SqliteUsageLedger
    limits: SpendingLimits
    clock: ManualClock

    async def say(
        self, caller: SecurityContext, text: str, session: Any = None
    ) -> list[AgentEvent]:
        if session is None:
            session = (await self.runtime.create_session("helper", caller)).id
        result = await self.runtime.run_turn(TurnRequest(session, caller, text))
        return list(result.events)


def refusal(events: list[AgentEvent]) -> str:
    (only,) = events
    assert isinstance(only, TurnFailed)
    assert only.error.code.value == "limit_reached"
    return only.error.detail


@asynccontextmanager
async def limited_bot(
    path: Path,
    fake: AnthropicFake,
    *,
    prices: Mapping[str, ModelPrice] | None = None,
    tools: ToolCatalog | None = None,
    catalog: AgentCatalog | None = None,
    clock: ManualClock | None = None,
    **limits: Any,
) -> AsyncIterator[Bot]:
    clock = clock or ManualClock()
    db = await Database.open(path, migrations=ALL_MIGRATIONS)
    ledger = SqliteUsageLedger(db)
    spending = SpendingLimits(ledger, PriceTable(prices or {}), clock=clock, **limits)
    provider = AnthropicProvider(api_key="sk-ant-test", base_url=fake.base_url, max_retries=0)
    try:
        async with Runtime(
            catalog=catalog or make_catalog(),
            store=SqliteSessionStore(db),
            provider=provider,
            settings=RuntimeSettings(model=MODEL),
            tools=tools,
            clock=clock,
            limits=spending,
        ) as runtime:
            yield Bot(runtime, ledger, spending, clock)
    finally:
        await provider.aclose()
        await db.aclose()
