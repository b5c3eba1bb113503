"""A short answer's final goes out as soon as the chat's pacing allows, using the short
burst Telegram tolerates, not one whole pacing interval after its live preview.

The chat's pacing interval is set to an hour here: a final that waited for the next
paced slot would never arrive within the safety bound, so the test ending at all shows
it did not wait (no timed assertion). The fake's flood control stays on and strict."""

from __future__ import annotations

import anyio
import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_groups import push_group_text
from tests.telegram.harness import USER, running_bot
from thalos_bot.channels.pacing.gate import BURST, ChatGate
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider

pytestmark = pytest.mark.anyio

HOUR = 3600.0
TICK = 10.0
"""The longest flush interval the pump allows: only the leading edge and the terminal
event reach the chat before a tick (a final never waits for one)."""
GROUP = -1001234567890
BOT = "@thalos_test_bot"


def _after_preview(fake: TelegramFake, chat: int) -> ScriptedProvider:
    """The model sends "Hello", then the rest of the line once the fake shows it."""

    async def preview_shown() -> None:
        await fake.wait_for(lambda: fake.texts(chat) == ["Hello"] or None, 10)

    return ScriptedProvider([[Say("Hello"), Await(preview_shown), Say(", world.")]])


@pytest.mark.parametrize("where", ["private", "group"])
async def test_a_one_line_final_follows_its_preview_at_once(fake: TelegramFake, where: str) -> None:
    chat = USER if where == "private" else GROUP
    if where == "group":
        fake.add_chat(GROUP, "supergroup")
    provider = _after_preview(fake, chat)
    with anyio.fail_after(20):
        async with running_bot(
            fake,
            provider,
            streaming="edit" if where == "private" else "draft",  # a group always edits
            groups=[GROUP],
            chat_min_interval=HOUR,
            pump={"flush_interval": TICK},
        ):
            if where == "group":
                push_group_text(fake, GROUP, USER, f"{BOT} greet me")
            else:
                fake.push_text(USER, USER, "greet me")
            await fake.wait_for(lambda: fake.texts(chat) == ["Hello, world."] or None, 15)
    visible = [
        (c.method, c.params["text"])
        for c in fake.calls(chat_id=chat)
        if c.method in {"sendMessage", "editMessageText", "sendMessageDraft"}
    ]
    assert visible == [("sendMessage", "Hello"), ("editMessageText", "Hello, world.")]
    assert all(c.status == 200 for c in fake.calls(chat_id=chat))
    assert fake.retry_after_violations == []


async def test_a_draft_answers_final_message_goes_at_once(fake: TelegramFake) -> None:
    """In a private chat with drafts, the final message follows the draft at once."""
    provider = _after_draft(fake)
    with anyio.fail_after(20):
        async with running_bot(
            fake, provider, streaming="draft", chat_min_interval=HOUR, pump={"flush_interval": TICK}
        ):
            fake.push_text(USER, USER, "greet me")
            await fake.wait_for(lambda: fake.texts(USER) == ["Hello, world."] or None, 15)
    methods = [
        c.method
        for c in fake.calls(chat_id=USER)
        if c.method in {"sendMessage", "editMessageText", "sendMessageDraft"}
    ]
    assert methods == ["sendMessageDraft", "sendMessage"]
    assert fake.retry_after_violations == []


def _after_draft(fake: TelegramFake) -> ScriptedProvider:
    async def draft_shown() -> None:
        await fake.wait_for(lambda: fake.calls("sendMessageDraft", chat_id=USER) or None, 10)

    return ScriptedProvider([[Say("Hello"), Await(draft_shown), Say(", world.")]])


async def test_streaming_still_waits_its_interval(fake: TelegramFake) -> None:
    """Only a completing call uses the burst: a second live preview waits its interval,
    so the final that follows still finds a call left in the bucket."""
    second = anyio.Event()

    async def preview_shown() -> None:
        await fake.wait_for(lambda: fake.texts(USER) == ["Hello"] or None, 10)

    async def more_text_waited() -> None:
        await second.wait()

    provider = ScriptedProvider(
        [[Say("Hello"), Await(preview_shown), Say(" there"), Await(more_text_waited), Say("!")]]
    )
    with anyio.fail_after(20):
        async with running_bot(
            fake, provider, streaming="edit", chat_min_interval=HOUR, pump={"flush_interval": 0.05}
        ) as bot:
            fake.push_text(USER, USER, "greet me")
            # The pump flushes " there"; the sender holds it (a preview, paced an hour).
            await fake.wait_for(lambda: bot.adapter.flushes == ["Hello", " there"] or None, 10)
            assert fake.texts(USER) == ["Hello"]
            second.set()
            await fake.wait_for(lambda: fake.texts(USER) == ["Hello there!"] or None, 15)
    edits = [c.params["text"] for c in fake.calls("editMessageText", chat_id=USER)]
    assert edits == ["Hello there!"], "the held preview was superseded by the final"
    assert fake.retry_after_violations == []


def test_the_gate_spends_the_burst_on_completing_calls_only() -> None:
    gate = ChatGate(min_interval=1.0)
    assert gate.ready_at("message") == 0.0
    gate.sent("message", at=10.0)
    assert gate.ready_at("message", "lead") == 11.0, "streaming waits the interval"
    assert gate.ready_at("message", "preview") == 11.0
    assert gate.ready_at("message", "final") == 10.0, "a final may follow at once"
    for _ in range(BURST - 1):
        gate.sent("message", at=10.0)
    assert gate.ready_at("message", "final") == 11.0, "the burst is spent"
    assert gate.ready_at("message", "lead") == 11.0
    assert gate.ready_at("message", "preview") == 12.0, "an edit leaves a call for the final"
    gate.sent("message", at=12.0)
    assert gate.ready_at("message", "final") == 12.0, "the call the edit left"
    gate.sent("message", at=12.0)
    assert gate.ready_at("message", "final") == 13.0, "refilled one per interval"
    assert gate.ready_at("draft", "final") == 0.0, "each lane has its own bucket"
    gate.block_for(5.0, at=12.0)
    assert gate.ready_at("message", "final") == 17.0, "retry_after holds all"
