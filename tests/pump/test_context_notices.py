"""What a person sees of the context window: the drop notice and /status's context line."""

from __future__ import annotations

import pytest

from tests.pump.harness import running_pump
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
