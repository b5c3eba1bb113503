"""A delegated subagent's tokens, over the real SDK and the strict fake: they count once
in the day's ledger (the subagent's own turn writes them), while the calling session
still counts them (its ``session_tokens``, /status), as the README's Delegation says."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.anthropic_api import AnthropicFake, FakeUsage, text_reply, tool_use_reply
from tests.limits.bot import Bot, limited_bot, refusal
from tests.subagents.conftest import ALICE, CATALOG
from thalos_bot.domain.events import Info, TurnCompleted
from thalos_bot.runtime.limits import LIMIT_REACHED
from thalos_bot.subagents.delegate import AgentsToolSource
from thalos_bot.subagents.runner import SubagentRunner
from thalos_bot.tools.catalog import SourceCatalog

pytestmark = pytest.mark.anyio

DELEGATE_CALL = 110
"""The boss's round that delegates: 100 in, 10 out."""
CHILD = 1005
"""The researcher's one call: 1,000 in, 5 out."""
LAST = 19
"""The boss's answer after the tool result (the fake's default usage)."""


def delegation(call_id: str = "toolu_1") -> Any:
    return tool_use_reply(
        "agents__delegate",
        {"agent": "researcher", "task": "Look it up."},
        id=call_id,
        usage=FakeUsage(input_tokens=100, output_tokens=10),
    )


def found() -> Any:
    return text_reply("Found: 42.", usage=FakeUsage(input_tokens=1000, output_tokens=5))


@asynccontextmanager
async def boss_bot(path: Path, fake: AnthropicFake, **limits: Any) -> AsyncIterator[Bot]:
    source = AgentsToolSource(CATALOG)
    async with limited_bot(
        path, fake, catalog=CATALOG, tools=SourceCatalog([source]), **limits
    ) as bot:
        source.bind(SubagentRunner(bot.runtime))
        yield bot


async def test_the_day_counts_a_subagents_tokens_once(tmp_path: Path) -> None:
    with AnthropicFake() as fake:
        fake.enqueue(delegation(), found(), text_reply("It is 42."))
        async with boss_bot(tmp_path / "t.db", fake, daily_tokens=1_000_000) as bot:
            session = (await bot.runtime.create_session("boss", ALICE)).id
            events = await bot.say(ALICE, "What is it?", session)
            day = await bot.ledger.day("alice", bot.limits.today())
            info = await bot.runtime.session_info(session)
            assert info is not None
            spending = await bot.runtime.spending(info)
    assert isinstance(events[-1], TurnCompleted)
    assert len(fake.requests) == 3
    total = DELEGATE_CALL + CHILD + LAST
    assert day.usage.total == total, "each token once: the boss's own calls and the child's"
    assert day.turns == 2, "the boss's turn and the researcher's"
    assert events[-1].usage.total == total, "the child's tokens count toward the boss's turn"
    assert info.usage.total == total
    assert spending is not None
    assert spending.session.total == total
    assert spending.today.usage.total == total


async def test_the_daily_limit_is_not_reached_by_counting_a_subagent_twice(
    tmp_path: Path,
) -> None:
    limit = DELEGATE_CALL + CHILD + LAST + 100  # room for all of it once, not twice
    with AnthropicFake() as fake:
        fake.enqueue(delegation(), found(), text_reply("It is 42."), text_reply("Still 42."))
        async with boss_bot(tmp_path / "t.db", fake, daily_tokens=limit) as bot:
            session = (await bot.runtime.create_session("boss", ALICE)).id
            await bot.say(ALICE, "What is it?", session)
            again = await bot.say(ALICE, "Are you sure?", session)
    assert isinstance(again[-1], TurnCompleted), again[-1]
    assert again[-1].text == "Still 42."


async def test_mid_turn_the_day_counts_a_subagent_once_and_the_session_counts_it(
    tmp_path: Path,
) -> None:
    # After the second delegating round: own calls 220, the first child 1,005 (in the
    # ledger already). Twice counted that is 2,230, past this daily limit; once, 1,225.
    daily = 1300
    with AnthropicFake() as fake:
        fake.enqueue(
            delegation("toolu_1"), found(), delegation("toolu_2"), found(), text_reply("42.")
        )
        async with boss_bot(tmp_path / "t.db", fake, daily_tokens=daily) as bot:
            events = await bot.say(
                ALICE, "Ask twice.", (await bot.runtime.create_session("boss", ALICE)).id
            )
    assert not [e for e in events if isinstance(e, Info) and e.name == LIMIT_REACHED]
    assert isinstance(events[-1], TurnCompleted)
    assert events[-1].text.endswith("42.")
    assert len(fake.requests) == 5, "both delegations ran"


async def test_the_session_limit_still_sees_the_subagents_tokens(tmp_path: Path) -> None:
    # After the second delegating round the session holds 220 own + 1,005 delegated.
    with AnthropicFake() as fake:
        fake.enqueue(delegation("toolu_1"), found(), delegation("toolu_2"), text_reply("x"))
        async with boss_bot(tmp_path / "t.db", fake, session_tokens=1200) as bot:
            session = (await bot.runtime.create_session("boss", ALICE)).id
            events = await bot.say(ALICE, "Ask twice.", session)
            refused = await bot.say(ALICE, "And now?", session)
    stopped = [e for e in events if isinstance(e, Info) and e.name == LIMIT_REACHED]
    assert [e.data["limit"] for e in stopped] == ["session_tokens"]
    assert len(fake.requests) == 3, "the second delegation was not run"
    assert refusal(refused).startswith("This session has used 1,225 tokens")
