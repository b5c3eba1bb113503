"""What a person sees of the context window: the drop notice and /status's context line."""

from __future__ import annotations

import pytest

from tests.pump.harness import running_pump
from thalos_bot.providers.fallback import FallbackProvider, Member
from thalos_bot.providers.routing import FixedWindow, ProviderRoute
from thalos_bot.providers.scripted import Fail, Say, ScriptedProvider

pytestmark = pytest.mark.anyio

WINDOW_CHARS = 200_000 * 4  # the default window, at four characters a token


async def test_dropped_context_is_told_once() -> None:
    huge = "x" * int(WINDOW_CHARS * 0.85)  # one answer nearly fills the window
    provider = ScriptedProvider([[Say(huge)], [Fail("summary failed")], [Say("ok")], [Say("ok2")]])
    async with running_pump(provider) as h:
        await h.source.send("first").wait()
        await h.source.send("second").wait()
        await h.source.send("third").wait()
    dropped = [n for n in h.adapter.notices() if "too long for the model" in n]
    assert len(dropped) == 1, h.adapter.notices()
    assert "earliest 1 turn " in dropped[0]
    assert "summary failed" not in dropped[0], "no provider text reaches the user"
    assert h.adapter.final_texts()[1:] == ["ok", "ok2"]
    assert len(provider.requests) == 4, "one summary attempt, then the turns"
    assert [m.text for m in provider.requests[2].messages] == ["second"]


async def test_status_shows_how_full_the_context_is() -> None:
    half = "y" * (WINDOW_CHARS // 2)
    provider = ScriptedProvider([[Say(half)], [Say("short")]])
    async with running_pump(provider) as h:
        await h.source.send("/status").wait()
        await h.source.send("one").wait()
        await h.source.send("two").wait()
        await h.source.send("/status").wait()
    unbound, status = h.adapter.notices()
    assert "Context" not in unbound
    assert "Context: 50% of 200k" in status, status


async def test_a_fallback_says_which_model_answered_and_an_unknown_window_is_told() -> None:
    down = ScriptedProvider([[Fail("Claude is overloaded right now.", fallback=True)]])
    local = ScriptedProvider([[Say("Hello from the local model.")]])
    chain = FallbackProvider(
        [Member("claude", down, "claude-x", 4096), Member("local", local, "qwen3:8b", 1024)]
    )
    routes = {"helper": ProviderRoute(chain, FixedWindow(None))}
    async with running_pump(ScriptedProvider(), routes=routes) as h:
        await h.source.send("hi").wait()
        await h.source.send("/status").wait()
    fallback, status = h.adapter.notices()
    assert fallback == "[fallback] claude could not answer; qwen3:8b is answering instead."
    assert h.adapter.final_texts() == ["Hello from the local model."]
    assert "the model's context window is unknown" in status, status
    assert "overloaded" not in fallback
