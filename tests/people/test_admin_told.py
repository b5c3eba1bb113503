"""The admins are told when someone reaches a limit: on the real daemon over the
Telegram fake, Ben's daily limit is reached; Ana, who holds the admin role, reads it in
the chat she last talked in, once, however many of Ben's turns are refused after."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.anthropic_api import text_reply
from tests.people.harness import daemon, fakes, head, telegram_section

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

ANA, BEN = 4242, 5151
admin_notice_text = (
    "[budget] ben reached their daily limit (daily_tokens); their turns are refused "
    "until it resets. To lift it for today: /budget lift ben"
)


async def test_the_admins_are_told_once_when_someone_reaches_a_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    with fakes(monkeypatch) as faked:
        telegram, anthropic = faked.telegram, faked.anthropic
        text = (
            head(anthropic.base_url, storage)
            + f"""
[[people]]
id = "ana"
roles = ["admin"]
identities = {{ telegram = [{ANA}] }}

[[people]]
id = "ben"
identities = {{ telegram = [{BEN}] }}
daily_tokens = 10

"""
            + telegram_section(telegram.base_url, [ANA, BEN])
        )
        anthropic.enqueue(text_reply("Hello Ana."), text_reply("Hello Ben."))
        async with daemon(tmp_path, text, ["telegram"]):
            telegram.push_text(ANA, ANA, "hi")
            assert await telegram.wait_for(lambda: "Hello Ana." in telegram.texts(ANA) or None, 20)
            telegram.push_text(BEN, BEN, "hi")  # spends past his 10 tokens
            assert await telegram.wait_for(lambda: "Hello Ben." in telegram.texts(BEN) or None, 20)
            for count, attempt in enumerate(("again", "and again"), start=1):
                telegram.push_text(BEN, BEN, attempt)
                assert await telegram.wait_for(
                    lambda n=count: (  # type: ignore[misc]
                        sum("daily limit is 10" in t for t in telegram.texts(BEN)) == n or None
                    ),
                    20,
                )
            assert await telegram.wait_for(
                lambda: any("[budget] ben reached" in t for t in telegram.texts(ANA)) or None,
                20,
            )
        told = [t for t in telegram.texts(ANA) if "[budget]" in t]
    assert told == [admin_notice_text]
    assert not any("[budget] ben reached" in t for t in telegram.texts(BEN))
