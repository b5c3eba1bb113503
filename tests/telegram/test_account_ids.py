"""A send in doubt while other chats take ids from the bot account's one counter: the
answer is shown exactly once, every time (see thalos_bot_telegram.uncertain).

Telegram numbers every message of every private chat and basic group from one counter
(the fake does too), so the ids just above a chat's own are usually other chats'
messages, which answer "message to edit not found" there. The real daemon (plugin,
PTB, pump) runs against the fake; each fault puts a send in doubt and makes another
chat's user write just before the request is handled, so that message takes the id
right below the one in doubt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_groups import push_group_text
from tests.telegram.harness import STRANGER, USER, running_bot
from tests.telegram.test_approvals import now, press, question, tools, write
from tests.telegram.test_approvals_delivery import asking, questions_shown
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider
from thalos_bot.service.outbox import Outbox
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.database import Database
from thalos_bot.storage.outbox import SqliteOutbox
from thalos_bot_telegram.adapter import TelegramAdapter

pytestmark = pytest.mark.anyio

OTHER = 5151
"""A second allowed user; their private chat has the same id."""
BASIC = -4711
SUPER = -1001234567890
BOT = "@thalos_test_bot"
ANSWER = "The slow answer, which must be shown exactly once."

Fault = Callable[[TelegramFake, Mapping[int, str]], None]
FAULTS: dict[str, Fault] = {
    "posted-then-dropped": lambda fake, others: fake.timeout_next(
        "sendMessage", close=True, others_say=others
    ),
    "posted-then-timeout": lambda fake, others: fake.timeout_next("sendMessage", others_say=others),
    "posted-then-502": lambda fake, others: fake.fail_next(
        "sendMessage", 502, applied=True, others_say=others
    ),
    "never-posted": lambda fake, others: fake.drop_next("sendMessage", others_say=others),
}


def shown(fake: TelegramFake, chat: int, text: str) -> int:
    return fake.texts(chat).count(text)


async def drained(bot_adapter: object) -> None:
    assert isinstance(bot_adapter, TelegramAdapter)
    with anyio.fail_after(10):
        await bot_adapter.drain()


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_two_private_chats_a_final_in_doubt_is_shown_once(
    fake: TelegramFake, fault: str
) -> None:
    # The reproduction: A asks a slow question; B writes and is answered; A's
    # final is in doubt while B writes again (B's message takes the id below it).
    gate = anyio.Event()
    provider = ScriptedProvider([[Await(gate.wait), Say(ANSWER)]])  # then: echoes
    async with running_bot(
        fake, provider, streaming="off", request_timeout=0.3, allowed_user_ids=[USER, OTHER]
    ) as bot:
        bot.say("a slow question")
        await fake.wait_for(lambda: provider.requests)
        bot.say("hello", chat=OTHER, user=OTHER)
        assert await bot.answer(1, chat=OTHER) == ["You said: hello"]
        FAULTS[fault](fake, {OTHER: "meanwhile"})
        gate.set()
        await fake.wait_for(lambda: shown(fake, USER, ANSWER), 10)
        await fake.wait_for(lambda: shown(fake, OTHER, "You said: meanwhile"), 10)
        await drained(bot.pair.adapter)
    assert fake.texts(USER) == [ANSWER], "shown exactly once"
    assert fake.texts(OTHER) == ["You said: hello", "You said: meanwhile"]
    ids = [m.message_id for m in fake.messages(USER, include_incoming=True)]
    assert ids == sorted(ids)
    assert len(ids) == 2
    assert ids[1] - ids[0] > 1, "other chats took the ids between"
    for probe in fake.calls("editMessageText", chat_id=USER):
        assert probe.params["text"] == ANSWER, "only the check edits, with the same text"


async def test_ten_private_chats_sends_in_doubt_at_once_are_each_shown_once(
    fake: TelegramFake,
) -> None:
    chats = list(range(7001, 7011))
    others = {STRANGER: "a stranger writes meanwhile"}  # not admitted, but takes an id
    fake.timeout_next("sendMessage", close=True, times=3, others_say=others)
    fake.drop_next("sendMessage", times=2, others_say=others)
    fake.fail_next("sendMessage", 502, applied=True, times=2, others_say=others)
    with capture_logs() as logs:
        async with running_bot(
            fake, streaming="off", request_timeout=0.3, allowed_user_ids=[USER, *chats]
        ) as bot:
            for chat in chats:
                bot.say(f"question {chat}", chat=chat, user=chat)
            for chat in chats:
                await bot.answer(1, chat=chat)
            await drained(bot.pair.adapter)
    for chat in chats:
        assert fake.texts(chat) == [f"You said: question {chat}"], chat
    faulted = [c for c in fake.calls("sendMessage") if c.fault is not None]
    assert len(faulted) == 7, "every fault hit an answer"
    assert sum(1 for e in logs if e["event"] == "telegram_send_uncertain") >= 7
    assert not any(e["event"] == "telegram_send_unresolved" for e in logs)
    assert fake.texts(STRANGER) == [], "the stranger is never answered"


@pytest.mark.parametrize("fault", ["posted-then-dropped", "never-posted"])
async def test_a_basic_group_draws_from_the_account_counter(fake: TelegramFake, fault: str) -> None:
    fake.add_chat(BASIC, "group")
    FAULTS[fault](fake, {USER: "meanwhile, in private"})
    async with running_bot(fake, groups=[BASIC], streaming="off", request_timeout=0.3) as bot:
        push_group_text(fake, BASIC, USER, f"{BOT} hello", chat_type="group")
        await fake.wait_for(lambda: shown(fake, BASIC, "You said: hello"), 10)
        await fake.wait_for(lambda: shown(fake, USER, "You said: meanwhile, in private"), 10)
        await drained(bot.pair.adapter)
    assert fake.texts(BASIC) == ["You said: hello"], "shown exactly once"
    assert fake.texts(USER) == ["You said: meanwhile, in private"]
    group_ids = [m.message_id for m in fake.messages(BASIC, include_incoming=True)]
    private_ids = [m.message_id for m in fake.messages(USER, include_incoming=True)]
    assert group_ids[0] < private_ids[0] < group_ids[1], "one counter for both"


@pytest.mark.parametrize("fault", ["posted-then-dropped", "posted-then-502", "never-posted"])
async def test_a_supergroup_keeps_its_own_counter(fake: TelegramFake, fault: str) -> None:
    fake.add_chat(SUPER, "supergroup")
    async with running_bot(
        fake, groups=[SUPER], streaming="off", request_timeout=0.3, allowed_user_ids=[USER, OTHER]
    ) as bot:
        bot.say("hello", chat=OTHER, user=OTHER)  # the account's ids move on meanwhile
        await bot.answer(1, chat=OTHER)
        FAULTS[fault](fake, {SUPER: "a member talks", OTHER: "and in private"})
        push_group_text(fake, SUPER, USER, f"{BOT} what now?")
        await fake.wait_for(lambda: shown(fake, SUPER, "You said: what now?"), 10)
        await fake.wait_for(lambda: shown(fake, OTHER, "You said: and in private"), 10)
        await drained(bot.pair.adapter)
    assert fake.texts(SUPER) == ["You said: what now?"], "shown exactly once"
    probes = [p.params["message_id"] for p in fake.calls("editMessageText", chat_id=SUPER)]
    member = fake.incoming_ids(SUPER)[-1]
    assert probes[0] == member, "the member's message first: it can't be edited"


@pytest.mark.parametrize("fault", ["posted-then-dropped", "posted-then-timeout", "never-posted"])
async def test_after_a_restart_other_chats_ids_are_not_taken_for_absence(
    fake: TelegramFake, tmp_path: Path, fault: str
) -> None:
    result = "Your weekly notes: three meetings, one deadline, no surprises."
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        async with running_bot(
            fake, marks=SqliteChatMarks(db), streaming="off", allowed_user_ids=[USER, OTHER]
        ) as bot:
            bot.say("hello")
            await bot.answer(1)
            bot.say("hi", chat=OTHER, user=OTHER)
            await bot.answer(1, chat=OTHER)
        FAULTS[fault](fake, {OTHER: "meanwhile"})
        async with running_bot(
            fake,
            marks=SqliteChatMarks(db),
            streaming="off",
            request_timeout=0.3,
            allowed_user_ids=[USER, OTHER],
        ) as bot:
            adapter = bot.pair.adapter
            assert isinstance(adapter, TelegramAdapter)
            rows = SqliteOutbox(db)
            async with Outbox(rows, {ChannelId("telegram"): adapter}, keep=3600).running() as out:
                await out.deliver(
                    ChannelId("telegram"), ConversationId(str(USER)), result, kind="answer"
                )
                await fake.wait_for(lambda: shown(fake, USER, result), 10)
                await fake.wait_for(lambda: shown(fake, OTHER, "You said: meanwhile"), 10)
                await drained(adapter)
            assert await rows.pending(ChannelId("telegram")) == []
        stored = await SqliteChatMarks(db).load(ChannelId("telegram"))
    assert fake.texts(USER) == ["You said: hello", result], "shown exactly once"
    assert stored["account"] >= max(fake.incoming_ids(OTHER))


async def test_strangers_leave_no_chat_marks(fake: TelegramFake, tmp_path: Path) -> None:
    strangers = list(range(9001, 9051))
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        async with running_bot(fake, marks=SqliteChatMarks(db)) as bot:
            for stranger in strangers:
                bot.say("let me in", chat=stranger, user=stranger)
            bot.say("hello")
            await bot.answer(1)
            await fake.wait_for(lambda: fake.pending_update_count == 0)
        stored = await SqliteChatMarks(db).load(ChannelId("telegram"))
    assert set(stored) == {str(USER), "account"}, "one row for the user, one for the account"
    last = max(m.message_id for m in fake.messages(USER, include_incoming=True))
    assert stored["account"] == last, "the account's mark learnt from every update"


async def test_an_approval_question_in_doubt_is_asked_once(fake: TelegramFake) -> None:
    catalog, source, _ = tools()
    # The second request is the other chat's (written while the question was in doubt).
    provider = ScriptedProvider([[write()], [Say("Noted.")], [Say("Written.")]])
    fake.fail_next("sendMessage", 502, applied=True, others_say={OTHER: "meanwhile"})
    with capture_logs() as logs:
        async with running_bot(
            fake, provider, tools=catalog, allowed_user_ids=[USER, OTHER], request_timeout=0.3
        ) as bot:
            bot.say("write my notes")
            asked = await question(bot)
            # Pressed once the check is over (every recorded call wakes the wait).
            await fake.wait_for(lambda: [e for e in logs if e["event"] == "telegram_send_checked"])
            await fake.wait_for(lambda: shown(fake, OTHER, "Noted."), 10)
            assert (await press(bot, asked, "Approve"))["text"] == "✅ Approved"
            await fake.wait_for(lambda: "Written." in fake.texts(USER))
            await fake.wait_for(lambda: "Approved by" in now(bot, asked).text)
            assert now(bot, asked).current.reply_markup is None, "the keyboard is gone"
    assert len(asking(fake)) == 1, "asked once"
    assert questions_shown(fake) == 1
    assert [name for name, _ in source.calls] == ["write_file"]
