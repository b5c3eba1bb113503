"""Who gets an answer: private chats with allowed users only; the offset is acknowledged
before any turn runs; the six commands are registered at start-up."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs
from telegram import Update

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import STRANGER, USER, running_bot
from thalos_bot.channels import notices
from thalos_bot.channels.notices import COMMANDS
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider
from thalos_bot_telegram.inbound import admit_each
from thalos_bot_telegram.intake import LIMIT

NOT_DOWNLOADED = LIMIT.not_downloaded


@pytest.mark.anyio
async def test_strangers_get_no_reply_at_all(fake: TelegramFake) -> None:
    with capture_logs() as logs:
        async with running_bot(fake) as bot:
            bot.say("secret probe text", chat=STRANGER, user=STRANGER)
            fake.push_message(STRANGER, STRANGER, kind="photo")
            bot.say("/help", chat=STRANGER, user=STRANGER)
            bot.say("me again")  # a later message from the allowed user...
            await bot.answer()  # ...is answered, so the stranger's were seen and dropped
    assert fake.calls(chat_id=STRANGER) == []
    assert fake.texts(STRANGER) == []
    assert bot.provider.requests[0].messages[-1].text == "me again"
    dropped = [e for e in logs if e["event"] == "telegram_sender_not_allowed"]
    assert len(dropped) == 3
    assert all(e["log_level"] == "debug" and e["user_id"] == STRANGER for e in dropped)
    assert not any("secret probe text" in repr(e) for e in logs), "the text is never logged"


@pytest.mark.anyio
async def test_an_allowed_user_in_a_group_is_ignored(fake: TelegramFake) -> None:
    group, supergroup, channel = -100, -1001234, -1009876
    async with running_bot(fake) as bot:
        fake.push_text(group, USER, "hi all", chat_type="group")
        fake.push_text(supergroup, USER, "/help", chat_type="supergroup")
        fake.push_text(channel, None, "a post", chat_type="channel")
        bot.say("in private")
        assert await bot.answer() == ["You said: in private"]
    for chat in (group, supergroup, channel):
        assert fake.calls(chat_id=chat) == []
    assert len(bot.provider.requests) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["sticker", "location"])
async def test_non_text_gets_a_short_notice(fake: TelegramFake, kind: str) -> None:
    async with running_bot(fake) as bot:
        content = {"location": {"latitude": 1.5, "longitude": 2.5}} if kind == "location" else None
        fake.push_message(USER, USER, kind=kind, content=content)
        assert await bot.answer() == [notices.only_text()]
        bot.say("still alive?")
        assert await bot.answer(2) == [notices.only_text(), "You said: still alive?"]
    assert fake.messages(USER)[0].raw_text == notices.only_text(), "plain text, no markup"


@pytest.mark.anyio
async def test_the_six_commands_are_registered_at_start_up(fake: TelegramFake) -> None:
    async with running_bot(fake):
        call = await fake.wait_for(lambda: fake.calls("setMyCommands"))
    registered = [(c["command"], c["description"]) for c in call[0].params["commands"]]
    assert registered == list(COMMANDS)


@pytest.mark.anyio
async def test_the_update_is_acknowledged_before_the_model_is_called(fake: TelegramFake) -> None:
    seen: list[int] = []
    update_ids: list[int] = []

    async def note_offset() -> None:
        seen.append(fake.acknowledged_offset)

    provider = ScriptedProvider([[Await(note_offset), Say("done")]])
    async with running_bot(fake, provider) as bot:
        update_ids.append(bot.say("do something with side effects"))
        await bot.answer()
    assert seen == [update_ids[0] + 1], "Telegram had forgotten the update before the turn ran"


@pytest.mark.anyio
async def test_a_burst_of_updates_is_acknowledged_then_handled(fake: TelegramFake) -> None:
    gate = anyio.Event()
    provider = ScriptedProvider([[Await(gate.wait), Say("first answer")]])
    async with running_bot(fake, provider) as bot:
        first = bot.say("one")
        await fake.wait_for(lambda: provider.requests)
        ids = [bot.say(f"more {i}") for i in range(3)]
        texts = await bot.answer(3)
        assert texts == [notices.busy()] * 3
        assert fake.acknowledged_offset > max(ids) > first
        gate.set()
        assert (await bot.answer(4))[-1] == "first answer"


@pytest.mark.anyio
async def test_start_is_answered_with_help(fake: TelegramFake) -> None:
    async with running_bot(fake) as bot:
        bot.say("/start")
        (text,) = await bot.answer()
    assert text == notices.help_text()


FRIEND = 7777


def _message(chat: int, user: int, **fields: Any) -> dict[str, Any]:
    return {
        "message_id": 1,
        "date": 1_700_000_000,
        "chat": {"id": chat, "type": "private", "first_name": "Test"},
        "from": {"id": user, "is_bot": False, "first_name": "Test"},
        **fields,
    }


@pytest.mark.anyio
async def test_one_bad_update_does_not_stop_the_bot_or_lose_the_rest(fake: TelegramFake) -> None:
    no_chat = _message(USER, USER, text="private words one")
    del no_chat["chat"]
    undecodable = _message(USER, USER, text="private words two", date="yesterday")
    # One batch: the first getUpdates at start-up gets all of it.
    fake.push_text(USER, USER, "before")
    bad_ids = [fake.push_update("message", no_chat), fake.push_update("message", undecodable)]
    fake.push_text(FRIEND, FRIEND, "after")
    with capture_logs() as logs:
        async with running_bot(fake, allowed_user_ids=[USER, FRIEND]) as bot:
            assert await bot.answer(chat=USER) == ["You said: before"]
            assert await bot.answer(chat=FRIEND) == ["You said: after"]
            bot.say("and later?", chat=FRIEND, user=FRIEND)
            assert (await bot.answer(2, chat=FRIEND))[-1] == "You said: and later?"
    (ignored,) = [e for e in logs if e["event"] == "telegram_update_ignored"]
    assert ignored["update_id"] == bad_ids[0]
    assert ignored["log_level"] == "warning"
    (unreadable,) = [e for e in logs if e["event"] == "telegram_update_unreadable"]
    assert unreadable["update_id"] == bad_ids[1]
    assert unreadable["error"] == "TypeError"
    assert "private words" not in repr(logs), "the text is never logged"


def test_an_update_whose_handling_fails_is_logged_and_skipped() -> None:
    updates = [Update(update_id=n) for n in (1, 2, 3)]
    handled: list[int] = []

    def handle(update: Update) -> None:
        if update.update_id == 2:
            raise KeyError("private words")  # the message may quote the update
        handled.append(update.update_id)

    with capture_logs() as logs:
        admit_each(updates, handle)
    assert handled == [1, 3]
    (failed,) = logs
    assert failed["event"] == "telegram_update_failed"
    assert failed["log_level"] == "error"
    assert failed["update_id"] == 2
    assert failed["error"] == "KeyError"
    assert failed["where"].startswith("test_receiving.py:")
    assert "private words" not in repr(logs)


@pytest.mark.anyio
async def test_a_file_telegram_will_not_hand_out_gets_a_notice(fake: TelegramFake) -> None:
    async with running_bot(fake) as bot:
        fake.push_message(USER, USER, kind="photo", caption="look")  # its file_id is unknown
        assert await bot.answer() == [NOT_DOWNLOADED]
        bot.say("still alive?")
        assert await bot.answer(2) == [NOT_DOWNLOADED, "You said: still alive?"]
    [call] = fake.calls("getFile")
    assert call.status == 400
    assert call.response is not None
    assert call.response["description"] == "Bad Request: invalid file_id"
    assert bot.provider.requests[-1].messages[-1].text == "still alive?"
