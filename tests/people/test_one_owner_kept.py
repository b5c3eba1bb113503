"""An existing one-principal deployment moves to people without losing anything, on
SQLite and on PostgreSQL: what its owner stored under ``principal_id`` (a session and
its history, a memory, the day's spend) is still theirs after a second person is
allowed, and the second person sees none of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.anthropic_api import text_reply, tool_use_reply
from tests.people.harness import daemon, fakes, head, telegram_section
from tests.people.test_household import recall_seen

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

OWNER, BEN = 4242, 5151


async def test_the_owners_data_stays_theirs_when_people_arrive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    with fakes(monkeypatch) as faked:
        telegram, anthropic = faked.telegram, faked.anthropic
        top = head(anthropic.base_url, storage) + '[memory.embeddings]\nmode = "off"\n'
        before = top + telegram_section(telegram.base_url, [OWNER], 'principal_id = "owner"')
        anthropic.enqueue(
            tool_use_reply("memory__remember", {"text": "The boat is called Wren."}, id="t1"),
            text_reply("Noted."),
        )
        async with daemon(tmp_path, before, ["telegram"]):
            telegram.push_text(OWNER, OWNER, "remember my boat's name: Wren")
            assert await telegram.wait_for(lambda: "Noted." in telegram.texts(OWNER) or None, 20)
        after = top + telegram_section(telegram.base_url, [OWNER, BEN], 'principal_id = "owner"')
        anthropic.enqueue(
            tool_use_reply("memory__recall", {"query": "boat name"}, id="t2"),
            text_reply("It is Wren."),
            tool_use_reply("memory__recall", {"query": "boat name"}, id="t3"),
            text_reply("I don't know."),
        )
        async with daemon(tmp_path, after, ["telegram"]) as host:
            telegram.push_text(OWNER, OWNER, "what is my boat called?")
            assert await telegram.wait_for(
                lambda: "It is Wren." in telegram.texts(OWNER) or None, 20
            )
            telegram.push_text(BEN, BEN, "what is the boat called?")
            assert await telegram.wait_for(
                lambda: "I don't know." in telegram.texts(BEN) or None, 20
            )
            owner_spend = await host.runtime.limits.used("owner", "day")  # type: ignore[union-attr]
        requests = anthropic.requests
    owners_turn = requests[2].body["messages"]
    assert isinstance(owners_turn, list)
    said = [m["content"] for m in owners_turn if m["role"] == "user"]
    assert "remember my boat's name: Wren" in str(said[0]), "the same session goes on"
    assert "Wren" in recall_seen(requests[3].body)
    assert "Wren" not in recall_seen(requests[5].body), "the second person sees none of it"
    assert owner_spend.turns == 2, "the day's spend is still the owner's"
