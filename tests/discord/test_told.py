"""The 429s discord.py waits out itself, as the channel hears of them: the wait read
from the headers (the longer of Retry-After and X-RateLimit-Reset-After), the Discord
channel from the route, and nothing for a global 429 or another route."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from multidict import CIMultiDict
from yarl import URL

from thalos_bot.channels.pacing.waits import header_wait
from thalos_bot_discord.client import WAITS, RateLimitTap

pytestmark = pytest.mark.anyio


def ended(status: int, path: str, **headers: str) -> Any:
    response = SimpleNamespace(status=status, headers=CIMultiDict(headers))
    return SimpleNamespace(response=response, url=URL(f"https://discord.test/api/v10{path}"))


def test_the_longer_of_the_two_waits_is_read() -> None:
    both = CIMultiDict({"Retry-After": "3", "X-RateLimit-Reset-After": "4.5"})
    assert header_wait(both, WAITS) == 4.5
    assert header_wait(CIMultiDict({"Retry-After": "2"}), WAITS) == 2.0
    assert header_wait(CIMultiDict({"Retry-After": "soon"}), WAITS) is None
    assert header_wait({"retry-after": ["7"]}) == 7.0, "a plain dict of lists (Slack's SDK)"


async def test_a_channels_429_and_a_global_one_are_told_and_nothing_else() -> None:
    tap = RateLimitTap()
    told: list[tuple[int | None, float]] = []
    tap.told = lambda channel, seconds: told.append((channel, seconds))
    hook: Any = tap.trace().on_request_end[0]
    await hook(None, None, ended(429, "/channels/42/messages", **{"Retry-After": "7"}))
    await hook(None, None, ended(200, "/channels/42/messages"))
    await hook(None, None, ended(429, "/users/@me/channels", **{"Retry-After": "7"}))
    await hook(
        None,
        None,
        ended(429, "/channels/42/messages", **{"Retry-After": "1", "X-RateLimit-Global": "true"}),
    )
    assert told == [(42, 7.0), (None, 1.0)], "a global 429 holds every channel"
