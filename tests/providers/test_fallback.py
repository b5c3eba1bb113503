"""The fallback chain: the next provider only for errors another may not have, and only
before anything was streamed; each member with its own model and output limit."""

from __future__ import annotations

from contextlib import aclosing

import pytest

from thalos_bot.domain.messages import Message
from thalos_bot.providers.base import (
    ModelDone,
    ModelEvent,
    ModelFallback,
    ModelRequest,
    ModelTextDelta,
    ModelUsage,
    ProviderError,
)
from thalos_bot.providers.fallback import FallbackProvider, Member
from thalos_bot.providers.scripted import Fail, Say, ScriptedProvider, Step

pytestmark = pytest.mark.anyio
DOWN = Fail("Claude is overloaded right now.", fallback=True)


def chain(*scripts: ScriptedProvider) -> FallbackProvider:
    names = ["claude", "local", "router"]
    return FallbackProvider(
        [Member(names[i], p, f"model-{names[i]}", 100 * (i + 1)) for i, p in enumerate(scripts)]
    )


async def collect(provider: FallbackProvider) -> list[ModelEvent]:
    request = ModelRequest("model-asked", 500, (), (Message.user("hi"),))
    async with aclosing(provider.stream(request)) as events:
        return [event async for event in events]


async def test_an_overloaded_first_provider_hands_over_and_says_who_answered() -> None:
    first = ScriptedProvider([[DOWN]])
    second = ScriptedProvider([[Say("Hello", " there")]])
    events = await collect(chain(first, second))
    assert ModelFallback("local", "model-local", "claude") in events
    assert [e.text for e in events if isinstance(e, ModelTextDelta)] == ["Hello", " there"]
    assert isinstance(events[-1], ModelDone)
    assert first.requests[0].model == "model-asked"
    assert (second.requests[0].model, second.requests[0].max_output_tokens) == ("model-local", 200)


async def test_no_fallback_after_text_was_streamed_nor_for_other_errors() -> None:
    scripts: list[list[Step]] = [[Say("partial"), DOWN], [Fail("The API key was rejected.")]]
    for script in scripts:
        second = ScriptedProvider([[Say("never")]])
        with pytest.raises(ProviderError):
            await collect(chain(ScriptedProvider([script]), second))
        assert not second.requests


async def test_when_every_provider_fails_the_first_error_is_raised() -> None:
    third = ScriptedProvider([[Fail("The router is down.", fallback=True)]])
    with pytest.raises(ProviderError) as caught:
        await collect(chain(ScriptedProvider([[DOWN]]), ScriptedProvider([[DOWN]]), third))
    assert caught.value.user_message == "Claude is overloaded right now."
    assert third.requests


async def test_usage_events_name_the_member_that_spent_them() -> None:
    """The scripted provider reports its input before failing, as a stream that breaks
    after ``message_start`` does: those tokens are the failed member's."""
    first = ScriptedProvider([[DOWN]])
    second = ScriptedProvider([[Say("Hello")]])
    events = await collect(chain(first, second))
    models = [e.model for e in events if isinstance(e, ModelUsage)]
    assert models == ["model-asked", "model-local", "model-local"]
