"""`doctor` says what Discord answered when it keeps failing: discord.py retries a 5xx
and waits out a 429 by itself, and inside the checks' time limit that used to read as a
network that never answered."""

from __future__ import annotations

import pytest

from tests.discord.harness import World, make_config
from tests.fakes.discord_api import DiscordFake
from tests.fakes.discord_limits import RouteLimit
from thalos_bot_discord import doctor
from thalos_bot_discord.doctor import discord_checks

pytestmark = pytest.mark.anyio

ME = "GET /users/@me"


async def test_a_5xx_on_every_try_is_said_as_discords_answer(
    fake: DiscordFake, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(doctor, "TIMEOUT", 2.0)  # discord.py sleeps 1 s, then 3 s
    fake.rest.refuse_next[ME] = 100
    (check,) = await discord_checks(make_config(fake, world), offline=False)
    assert check.outcome == "fail"
    assert check.detail.startswith("Discord answered 502 to every try"), check.detail
    assert [route for route, _ in fake.rest.calls].count(ME) >= 2, "discord.py retried"


async def test_a_long_429_is_said_with_its_wait_instead_of_being_slept(
    fake: DiscordFake, world: World
) -> None:
    fake.limits.routes[ME] = RouteLimit("5a1e0c3b9d2f4e6a8c7b1d0f3e2a4c6b", 50, 1.0)
    fake.limits.forced[ME] = 600.0
    (check,) = await discord_checks(make_config(fake, world), offline=False)
    assert check.outcome == "fail"
    assert check.detail == "Discord answered 429: rate limited for 600 s"
    assert fake.limits.refused == [ME]


async def test_a_429_waited_past_the_time_limit_is_said_as_discords_answer(
    fake: DiscordFake, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(doctor, "TIMEOUT", 1.0)
    fake.limits.routes[ME] = RouteLimit("5a1e0c3b9d2f4e6a8c7b1d0f3e2a4c6b", 50, 1.0)
    fake.limits.forced[ME] = 20.0  # under discord.py's 30 s floor: it would sleep it
    (check,) = await discord_checks(make_config(fake, world), offline=False)
    assert check.outcome == "fail"
    assert check.detail.startswith("Discord answered 429 to every try"), check.detail
