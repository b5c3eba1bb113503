"""Linking from a chat, over the Telegram and Discord fakes: ``/link`` on Telegram gives
a code; ``/link <code>`` from Discord makes that Discord account the same person (what
she remembered on Telegram, she recalls there). A stranger's ``/link`` is never
answered, a code works once, and ``/unlink`` undoes the link."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.anthropic_api import text_reply, tool_use_reply
from tests.fakes.discord_api import DiscordFake
from tests.fakes.telegram_api import TelegramFake
from tests.people.harness import (
    daemon,
    daemon_log,
    discord_section,
    explained,
    fakes,
    head,
    host_state,
    telegram_section,
    telegram_state,
)
from tests.people.test_household import recall_seen

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

ANA, STRANGER = 4242, 7777
SECRET = "the bike lock is 4-1-7"
CODE = re.compile(r"Your link code is ([A-Z0-9]{4}-[A-Z0-9]{4})\.")


def config(
    telegram: TelegramFake, discord: DiscordFake, anthropic: str, users: list[int], storage: str
) -> str:
    return (
        head(anthropic, storage)
        + telegram_section(telegram.base_url, [ANA])
        + discord_section(discord.base_url, discord.gateway_url, users)
    )


async def test_a_code_links_another_chat_once_and_only_for_the_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    with fakes(monkeypatch) as faked:
        telegram, discord, anthropic = faked.telegram, faked.discord, faked.anthropic
        first = discord.add_user("first")  # Discord's first allowed user: its own owner
        ana = discord.add_user("ana")
        other = discord.add_user("other")
        users = [first, ana, other]
        text = config(telegram, discord, anthropic.base_url, users, storage)
        anthropic.enqueue(
            tool_use_reply("memory__remember", {"text": SECRET}, id="toolu_a"),
            text_reply("Noted."),
            tool_use_reply("memory__recall", {"query": "bike lock"}, id="toolu_b"),
            text_reply("Found it."),
            tool_use_reply("memory__recall", {"query": "bike lock"}, id="toolu_c"),
            text_reply("Nothing."),
        )
        with daemon_log() as events:
            async with daemon(tmp_path, text, ["telegram", "discord"]) as host:
                state = (telegram_state(telegram, ANA), host_state(host, events))
                telegram.push_text(ANA, ANA, "remember the bike lock code")
                noted = telegram.wait_for(lambda: "Noted." in telegram.texts(ANA) or None, 20)
                assert await explained(noted, *state)
                telegram.push_text(ANA, ANA, "/link")
                coded = telegram.wait_for(
                    lambda: next((m for t in telegram.texts(ANA) if (m := CODE.search(t))), None),
                    20,
                )
                found = await explained(coded, *state)
                assert found is not None
                code = found.group(1)

                telegram.push_text(STRANGER, STRANGER, f"/link {code}")  # never let in
                await explained(discord.wait_for(discord.connected, 20), state[1])
                ana_dm = discord.dm_channel_id(ana)
                discord.say_dm(ana, f"/link {code}")
                await said(discord, ana_dm, "Linked:", state[1])
                other_dm = discord.dm_channel_id(other)
                discord.say_dm(other, f"/link {code}")  # a second use
                await said(discord, other_dm, "unknown, used or expired", state[1])
                discord.say_dm(ana, "where is the bike lock code?")
                await said(discord, ana_dm, "Found it.", state[1])
                discord.say_dm(ana, "/unlink")
                await said(discord, ana_dm, "Unlinked:", state[1])
                discord.say_dm(ana, "and now?")
                await said(discord, ana_dm, "Nothing.", state[1])
                links = await host.stores.links.listing()
        assert telegram.texts(STRANGER) == []
        requests = anthropic.requests
        assert SECRET in recall_seen(requests[3].body)  # linked: her own memory
        assert SECRET not in recall_seen(requests[5].body)  # unlinked: no longer hers
        [link] = links
        assert (link.transport, link.user_id, link.principal) == ("discord", str(ana), "owner")
        assert link.unlinked_at is not None  # kept on record


async def said(discord: DiscordFake, channel: int, part: str, state: Callable[[], str]) -> None:
    """Until the bot has said something with ``part`` in ``channel``."""
    said = discord.wait_for(lambda: any(part in t for t in discord.texts(channel)) or None, 20)
    await explained(said, lambda: f"discord: {discord.texts(channel)!r}", state)
