"""A household on one daemon, over the Telegram and Discord fakes and the Anthropic fake:
Ana on Telegram and Discord is one person, Ben on Telegram another. What Ana asks the
bot to remember on Telegram, she recalls on Discord; Ben, allowed on the same Telegram
bot, never recalls it, and his spend is not hers."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.channels.cli_process import run_piped
from tests.fakes.anthropic_api import text_reply, tool_use_reply
from tests.fakes.discord_api import DiscordFake
from tests.fakes.telegram_api import TelegramFake
from tests.people.harness import (
    daemon,
    discord_section,
    fakes,
    head,
    telegram_section,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

ANA_TELEGRAM, BEN_TELEGRAM = 4242, 5151
SECRET = "the spare key is under the blue pot"


def recall_seen(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    blocks = [b for b in messages[-1]["content"] if b["type"] == "tool_result"]
    content = blocks[0]["content"]
    return content if isinstance(content, str) else "".join(c["text"] for c in content)


def config(
    telegram: TelegramFake, discord: DiscordFake, anthropic: str, ana: int, storage: str
) -> str:
    return (
        head(anthropic, storage)
        + f"""
[[people]]
id = "ana"
name = "Ana"
identities = {{ telegram = [{ANA_TELEGRAM}], discord = [{ana}] }}

[[people]]
id = "ben"
name = "Ben"
identities = {{ telegram = [{BEN_TELEGRAM}] }}

"""
        + telegram_section(telegram.base_url, [ANA_TELEGRAM, BEN_TELEGRAM])
        + discord_section(discord.base_url, discord.gateway_url, [ana])
    )


async def test_two_people_on_two_transports_never_share_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    with fakes(monkeypatch) as faked:
        telegram, discord, anthropic = faked.telegram, faked.discord, faked.anthropic
        ana_discord = discord.add_user("ana")
        text = config(telegram, discord, anthropic.base_url, ana_discord, storage)
        anthropic.enqueue(
            tool_use_reply("memory__remember", {"text": SECRET}, id="toolu_a"),
            text_reply("Noted."),
            tool_use_reply("memory__recall", {"query": "spare key"}, id="toolu_b"),
            text_reply("Ben's answer."),
            tool_use_reply("memory__recall", {"query": "spare key"}, id="toolu_c"),
            text_reply("Ana's answer."),
        )
        async with daemon(tmp_path, text, ["telegram", "discord"]) as host:
            telegram.push_text(ANA_TELEGRAM, ANA_TELEGRAM, "remember where the spare key is")
            assert await telegram.wait_for(
                lambda: "Noted." in telegram.texts(ANA_TELEGRAM) or None, 20
            )
            telegram.push_text(BEN_TELEGRAM, BEN_TELEGRAM, "where is the spare key?")
            assert await telegram.wait_for(
                lambda: "Ben's answer." in telegram.texts(BEN_TELEGRAM) or None, 20
            )
            await discord.wait_for(discord.connected, 20)
            discord.say_dm(ana_discord, "where is the spare key?")
            channel = discord.dm_channel_id(ana_discord)
            await discord.wait_for(lambda: "Ana's answer." in discord.texts(channel) or None, 20)
            today = datetime.now(UTC).date().isoformat()
            ledger = host.stores.usage
            spent = {
                person: (await ledger.day(person, today)).usage.total
                for person in ("ana", "ben", "owner", f"telegram:{BEN_TELEGRAM}")
            }
        requests = anthropic.requests
        assert SECRET not in recall_seen(requests[3].body)  # Ben's recall
        assert SECRET in recall_seen(requests[5].body)  # Ana's, on Discord
    # Each person's spend is their own: Ana's two turns, Ben's one, nobody else's.
    assert spent["ana"] > spent["ben"] > 0
    assert spent["owner"] == spent[f"telegram:{BEN_TELEGRAM}"] == 0


async def test_what_is_shared_on_purpose_both_recall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[memory] shared_owner``: what the operator files there (``thalos-bot memory add
    --owner household``) both people recall; their own memories still do not cross."""
    with fakes(monkeypatch) as faked:
        telegram, anthropic = faked.telegram, faked.anthropic
        text = (
            head(anthropic.base_url)
            + '[memory]\nshared_owner = "household"\n'
            + '[memory.embeddings]\nmode = "off"\n'
            + telegram_section(telegram.base_url, [ANA_TELEGRAM, BEN_TELEGRAM])
        )
        (tmp_path / "bot.toml").write_text(text, encoding="utf-8")
        added = run_piped(
            ["memory", "add", "--owner", "household", "The wifi password is on the fridge."],
            "",
            cwd=tmp_path,
            timeout=60,
        )
        assert added.returncode == 0, added.stderr
        anthropic.enqueue(
            tool_use_reply("memory__recall", {"query": "wifi password"}, id="toolu_a"),
            text_reply("For Ana."),
            tool_use_reply("memory__recall", {"query": "wifi password"}, id="toolu_b"),
            text_reply("For Ben."),
        )
        async with daemon(tmp_path, text, ["telegram"]):
            telegram.push_text(ANA_TELEGRAM, ANA_TELEGRAM, "where is the wifi password?")
            assert await telegram.wait_for(
                lambda: "For Ana." in telegram.texts(ANA_TELEGRAM) or None, 20
            )
            telegram.push_text(BEN_TELEGRAM, BEN_TELEGRAM, "and the wifi?")
            assert await telegram.wait_for(
                lambda: "For Ben." in telegram.texts(BEN_TELEGRAM) or None, 20
            )
        requests = anthropic.requests
    assert "on the fridge" in recall_seen(requests[1].body)  # Ana
    assert "on the fridge" in recall_seen(requests[3].body)  # Ben


async def test_remember_shared_is_recalled_by_everyone_and_remember_only_by_you(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    """``/remember shared …`` (with ``[memory] shared_writes``) files a memory both
    people recall; ``/remember …`` keeps it the sender's own."""
    with fakes(monkeypatch) as faked:
        telegram, anthropic = faked.telegram, faked.anthropic
        text = (
            head(anthropic.base_url, storage)
            + '[memory]\nshared_owner = "household"\nshared_writes = true\n'
            + '[memory.embeddings]\nmode = "off"\n'
            + telegram_section(telegram.base_url, [ANA_TELEGRAM, BEN_TELEGRAM])
        )
        anthropic.enqueue(
            tool_use_reply("memory__recall", {"query": "bins"}, id="toolu_a"),
            text_reply("For Ben."),
        )
        async with daemon(tmp_path, text, ["telegram"]):
            for said in ("/remember shared The bins go out on Thursday", "/remember My bins PIN"):
                telegram.push_text(ANA_TELEGRAM, ANA_TELEGRAM, said)
            assert await telegram.wait_for(
                lambda: (
                    (
                        any("Remembered for everyone" in t for t in telegram.texts(ANA_TELEGRAM))
                        and any(
                            "Remembered: My bins PIN" in t for t in telegram.texts(ANA_TELEGRAM)
                        )
                    )
                    or None
                ),
                20,
            )
            telegram.push_text(BEN_TELEGRAM, BEN_TELEGRAM, "when do the bins go out?")
            assert await telegram.wait_for(
                lambda: "For Ben." in telegram.texts(BEN_TELEGRAM) or None, 20
            )
        seen = recall_seen(anthropic.requests[1].body)
    assert "bins go out on Thursday" in seen
    assert "PIN" not in seen
