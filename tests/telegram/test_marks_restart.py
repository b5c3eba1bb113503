"""A restarted daemon's first send to a chat, in doubt: the highest message id known in
the chat is read back from the database, so the send is checked there rather than made
again blindly, and the user sees the message exactly once.

The daemon is the real plugin, outbox service and SQLite database, against the Telegram
fake (real python-telegram-bot over sockets); the "restart" is a second channel on the
same database file, after the first one closed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER, running_bot
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.service.outbox import Outbox
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database
from thalos_bot.storage.outbox import SqliteOutbox
from thalos_bot_telegram.adapter import TelegramAdapter

pytestmark = pytest.mark.anyio

TELEGRAM = ChannelId("telegram")
CHAT = ConversationId(str(USER))
RESULT = "Your weekly notes: three meetings, one deadline, no surprises."

FAULTS: dict[str, Callable[[TelegramFake], None]] = {
    "posted-then-dropped": lambda fake: fake.timeout_next("sendMessage", close=True),
    "posted-then-502": lambda fake: fake.fail_next("sendMessage", 502, applied=True),
    "posted-then-timeout": lambda fake: fake.timeout_next("sendMessage"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_a_first_send_after_a_restart_is_checked_not_repeated(
    fake: TelegramFake, tmp_path: Path, fault: str
) -> None:
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        # The first run: the user writes, the bot answers (ids 1 and 2 in the chat).
        async with running_bot(fake, marks=SqliteChatMarks(db), streaming="off") as bot:
            bot.say("hello")
            assert await bot.answer(1) == ["You said: hello"]

        # The second run: nobody writes; the first thing it sends is a scheduled result,
        # which Telegram posts but never confirms.
        FAULTS[fault](fake)
        async with running_bot(
            fake, marks=SqliteChatMarks(db), streaming="off", request_timeout=0.5
        ) as bot:
            adapter = bot.pair.adapter
            assert isinstance(adapter, TelegramAdapter)
            rows = SqliteOutbox(db)
            async with Outbox(rows, {TELEGRAM: adapter}, keep=3600).running() as outbox:
                await outbox.deliver(TELEGRAM, CHAT, RESULT, kind="answer")
                await fake.wait_for(lambda: fake.calls("editMessageText"), 10)
                with anyio.fail_after(10):
                    await adapter.drain()
            assert await rows.pending(TELEGRAM) == [], "the row was confirmed"

    assert fake.texts(USER) == ["You said: hello", RESULT], "shown exactly once"
    assert [c.params["text"] for c in fake.calls("sendMessage")].count(RESULT) == 1
    (probe,) = fake.calls("editMessageText")
    known_before = max(m.message_id for m in fake.messages(USER, include_incoming=True)[:2])
    shown = fake.messages(USER)[-1].message_id
    assert probe.params["message_id"] == shown, "found where it arrived: no other probe"
    assert shown > known_before, "checked above the ids the first run knew"
    assert probe.params["text"] == RESULT
    assert probe.status == 400  # "message is not modified": it is there, nothing changed
