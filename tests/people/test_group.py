"""Two people in one Telegram group: each talks to a session of their own, so neither's
turn reads the other's history, and each one's ``/status`` is about their own session.
One turn runs at a time in the group (the chat shows one answer at a time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.anthropic_api import text_reply
from tests.fakes.telegram_groups import push_group_text
from tests.people.harness import daemon, fakes, head, telegram_section

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

ANA, BEN, GROUP = 4242, 5151, -100777
BOT = "@thalos_test_bot"


def user_texts(body: dict[str, object]) -> list[str]:
    messages = body["messages"]
    assert isinstance(messages, list)
    said: list[str] = []
    for message in messages:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = [content] if isinstance(content, str) else content
        said += [b if isinstance(b, str) else b.get("text", "") for b in blocks]
    return said


async def test_two_people_in_a_group_each_have_their_own_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    with fakes(monkeypatch) as faked:
        telegram, anthropic = faked.telegram, faked.anthropic
        text = head(anthropic.base_url, storage) + telegram_section(
            telegram.base_url, [ANA, BEN], f"groups = [{GROUP}]"
        )
        anthropic.enqueue(text_reply("For Ana."), text_reply("For Ben."), text_reply("Ana again."))
        async with daemon(tmp_path, text, ["telegram"]):
            push_group_text(telegram, GROUP, ANA, f"{BOT} my secret plan is tulips")
            assert await telegram.wait_for(lambda: "For Ana." in telegram.texts(GROUP) or None, 20)
            push_group_text(telegram, GROUP, BEN, f"{BOT} what did Ana say?")
            assert await telegram.wait_for(lambda: "For Ben." in telegram.texts(GROUP) or None, 20)
            push_group_text(telegram, GROUP, ANA, f"{BOT} and then?")
            assert await telegram.wait_for(
                lambda: "Ana again." in telegram.texts(GROUP) or None, 20
            )
        ben, ana_again = anthropic.requests[1].body, anthropic.requests[2].body
        assert not any("tulips" in text for text in user_texts(ben))  # not Ben's history
        assert any("tulips" in text for text in user_texts(ana_again))  # still Ana's
        assert not any("what did Ana say" in text for text in user_texts(ana_again))
