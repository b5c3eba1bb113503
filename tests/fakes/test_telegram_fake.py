"""The Telegram fake, driven by the real python-telegram-bot over real sockets."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
from collections.abc import Awaitable, Callable, Iterator

import anyio
import httpx
import pytest
import telegram
from telegram.error import (
    BadRequest,
    Conflict,
    EndPointNotFound,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TimedOut,
)
from telegram.request import HTTPXRequest

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_html import HtmlError, parse_html
from tests.fakes.telegram_polling import LongPoll
from tests.fakes.telegram_updates import UpdateQueue
from tests.media.samples import png

pytestmark = pytest.mark.anyio

CHAT = 4242
GROUP = -1001234567


@pytest.fixture(autouse=True)
def _retry_after_as_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    # PTB 22 warns when RetryAfter.retry_after is read as an int; opt in to timedelta.
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


@pytest.fixture
def fake() -> Iterator[TelegramFake]:
    """A fake without flood control, for tests about everything else."""
    with TelegramFake(per_chat_interval=0, global_per_second=0) as running:
        yield running


def make_bot(fake: TelegramFake, *, token: str | None = None) -> telegram.Bot:
    return telegram.Bot(
        token or fake.token,
        base_url=fake.base_url + "/bot",
        request=HTTPXRequest(read_timeout=5, connect_timeout=2),
        get_updates_request=HTTPXRequest(connection_pool_size=1, read_timeout=5),
    )


# -- identity ----------------------------------------------------------------------


async def test_get_me_answers_with_the_bot_user(fake: TelegramFake) -> None:
    async with make_bot(fake) as bot:
        me = await bot.get_me()
    assert me.is_bot
    assert me.username == "thalos_test_bot"
    assert me.id == 123456
    assert [call.method for call in fake.calls()] == ["getMe", "getMe"]


async def test_a_wrong_token_is_unauthorized(fake: TelegramFake) -> None:
    wrong = ":".join(("654321", "TEST-wrong-token"))
    with pytest.raises(InvalidToken, match="rejected by the server"):
        async with make_bot(fake, token=wrong):
            pass
    assert fake.calls("getMe")[0].status == 401
    assert fake.calls("getMe")[0].response == {
        "ok": False,
        "error_code": 401,
        "description": "Unauthorized",
    }


async def test_an_unknown_method_is_not_found(fake: TelegramFake) -> None:
    async with make_bot(fake) as bot:
        with pytest.raises(EndPointNotFound):
            await bot.do_api_request("sendNonsense", api_kwargs={"chat_id": CHAT})
    assert fake.calls("sendNonsense")[0].response == {
        "ok": False,
        "error_code": 404,
        "description": "Not Found",
    }


async def test_json_and_query_string_requests_are_understood(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    async with httpx.AsyncClient(base_url=f"{fake.base_url}/bot{fake.token}") as client:
        sent = await client.post("/sendmessage", json={"chat_id": CHAT, "text": "via json"})
        me = await client.get("/getMe?x=1")
    assert sent.json()["result"]["text"] == "via json"
    assert me.json() == {"ok": True, "result": fake.bot_user}
    assert fake.texts(CHAT) == ["via json"]


# -- updates -----------------------------------------------------------------------


async def test_a_pushed_text_is_delivered_until_its_offset_is_confirmed(
    fake: TelegramFake,
) -> None:
    update_id = fake.push_text(CHAT, CHAT, "hello", username="alice")
    async with make_bot(fake) as bot:
        first = await bot.get_updates()
        again = await bot.get_updates()
        after = await bot.get_updates(offset=update_id + 1)
    assert [u.update_id for u in first] == [update_id]
    message = first[0].message
    assert message is not None
    assert message.text == "hello"
    assert message.chat.type == "private"
    assert message.from_user is not None
    assert message.from_user.username == "alice"
    assert [u.update_id for u in again] == [update_id]  # not confirmed yet
    assert after == ()
    assert fake.acknowledged_offset == update_id + 1
    assert fake.pending_update_count == 0


async def test_commands_limit_and_negative_offset(fake: TelegramFake) -> None:
    ids = [fake.push_text(CHAT, CHAT, text) for text in ("/start", "two", "three")]
    async with make_bot(fake) as bot:
        limited = await bot.get_updates(limit=1)
        last = await bot.get_updates(offset=-1)
    assert limited[0].message is not None
    assert [(e.type, e.offset, e.length) for e in limited[0].message.entities] == [
        ("bot_command", 0, 6)
    ]
    assert [u.update_id for u in last] == [ids[2]]
    assert fake.pending_update_count == 1


async def test_media_group_and_channel_messages(fake: TelegramFake) -> None:
    fake.push_message(CHAT, CHAT, kind="photo", caption="look")
    fake.push_message(CHAT, CHAT, kind="voice")
    fake.push_message(GROUP, 7, kind="sticker", chat_type="supergroup")
    fake.push_message(GROUP - 1, None, kind="document", chat_type="channel", username="news")
    async with make_bot(fake) as bot:
        updates = await bot.get_updates()
    photo, voice, sticker, post = updates
    assert photo.message is not None
    assert photo.message.photo
    assert photo.message.caption == "look"
    assert voice.message is not None
    assert voice.message.voice is not None
    assert sticker.message is not None
    assert sticker.message.sticker is not None
    assert sticker.message.chat.type == "supergroup"
    assert post.channel_post is not None
    assert post.channel_post.document is not None
    assert post.channel_post.sender_chat is not None


async def test_allowed_updates_filters_and_is_remembered(fake: TelegramFake) -> None:
    fake.push_update(
        "callback_query",
        {
            "id": "1",
            "from": {"id": 1, "is_bot": False, "first_name": "A"},
            "chat_instance": "x",
            "data": "d",
        },
    )
    message_id = fake.push_text(CHAT, CHAT, "hi")
    async with make_bot(fake) as bot:
        only_messages = await bot.get_updates(allowed_updates=["message"])
        still = await bot.get_updates()
    assert [u.update_id for u in only_messages] == [message_id]
    assert [u.update_id for u in still] == [message_id]


async def test_a_long_poll_returns_when_an_update_arrives(fake: TelegramFake) -> None:
    received: list[tuple[telegram.Update, ...]] = []
    async with make_bot(fake) as bot:
        with anyio.fail_after(3):  # promptly, not after the 30 s poll timeout
            async with anyio.create_task_group() as tg:

                async def poll() -> None:
                    received.append(await bot.get_updates(timeout=30))

                tg.start_soon(poll)
                await fake.wait_for(lambda: fake.polling)
                update_id = fake.push_text(CHAT, CHAT, "mid-wait")
    assert [u.update_id for u in received[0]] == [update_id]


async def test_a_long_poll_ends_empty_when_its_timeout_passes(fake: TelegramFake) -> None:
    async with make_bot(fake) as bot:
        with anyio.fail_after(3):
            updates = await bot.get_updates(timeout=dt.timedelta(seconds=0.2))
    assert updates == ()
    assert not fake.polling


async def test_a_second_poller_terminates_the_waiting_one(fake: TelegramFake) -> None:
    errors: list[Exception] = []
    async with make_bot(fake) as first, make_bot(fake) as second:
        with anyio.fail_after(3):
            async with anyio.create_task_group() as tg:

                async def poll() -> None:
                    try:
                        await first.get_updates(timeout=30)
                    except Conflict as error:
                        errors.append(error)

                tg.start_soon(poll)
                await fake.wait_for(lambda: fake.polling)
                assert await second.get_updates(timeout=0) == ()
    assert len(errors) == 1
    assert "terminated by other getUpdates request" in str(errors[0])


async def test_get_updates_conflicts_with_a_webhook(fake: TelegramFake) -> None:
    fake.set_webhook("https://example.invalid/hook")
    async with make_bot(fake) as bot:
        with pytest.raises(Conflict, match="webhook is active"):
            await bot.get_updates()
        info = await bot.get_webhook_info()
        assert info.url == "https://example.invalid/hook"
        assert await bot.delete_webhook()
        assert await bot.get_updates() == ()
    assert fake.webhook_url is None


# -- messages ----------------------------------------------------------------------


async def test_send_and_edit_keep_what_the_user_sees(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        sent = await bot.send_message(CHAT, "<b>Hi</b> &amp; bye ", parse_mode="HTML")
        edited = await bot.edit_message_text(
            "<i>Hi</i> again", CHAT, sent.message_id, parse_mode="HTML"
        )
        second = await bot.send_message(CHAT, "plain")
    assert sent.text == "Hi & bye"
    assert [(e.type, e.offset, e.length) for e in sent.entities] == [("bold", 0, 2)]
    assert isinstance(edited, telegram.Message)
    assert edited.edit_date is not None
    assert second.message_id == sent.message_id + 1
    assert fake.texts(CHAT) == ["Hi again", "plain"]
    message = fake.messages(CHAT)[0]
    assert message.raw_text == "<i>Hi</i> again"
    assert [v.text for v in message.history] == ["Hi & bye"]


async def test_a_reply_quotes_the_message_as_it_stands_now(fake: TelegramFake) -> None:
    """``reply_to_message`` is the replied message as last edited, by the bot or by its
    sender (an ``edited_message`` update), as on Telegram; never as first sent."""
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        sent = await bot.send_message(CHAT, "first answer")
        await bot.edit_message_text("edited answer", CHAT, sent.message_id)
        fake.push_text(CHAT, CHAT, "typo")
        own = fake.incoming_ids(CHAT)[-1]
        payload = {**fake.messages(CHAT, include_incoming=True)[-1].payload}
        fake.push_update("edited_message", payload | {"text": "fixed", "edit_date": 1})
        fake.push_photo(CHAT, CHAT, png(8, 8), caption="caption one")
        photo = fake.incoming_ids(CHAT)[-1]
        fake.push_edit(CHAT, photo, "caption two")
        fake.push_reply(CHAT, CHAT, "about the answer", reply_to=sent.message_id)
        fake.push_reply(CHAT, CHAT, "about my message", reply_to=own)
        fake.push_reply(CHAT, CHAT, "about my photo", reply_to=photo)
        updates = await bot.get_updates(allowed_updates=["message", "edited_message"])
    edits = [u.edited_message for u in updates if u.edited_message is not None]
    assert [(e.text, e.caption) for e in edits] == [("fixed", None), (None, "caption two")]
    replies = [
        u.message.reply_to_message for u in updates if u.message and u.message.reply_to_message
    ]
    assert [(r.text, r.caption) for r in replies] == [
        ("edited answer", None),
        ("fixed", None),
        (None, "caption two"),
    ]
    assert all(r.edit_date is not None for r in replies)
    assert [v.text for v in fake.messages(CHAT, include_incoming=True)[1].history] == ["typo"]


async def test_edits_that_change_nothing_or_miss_are_refused(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        sent = await bot.send_message(CHAT, "<b>same</b>", parse_mode="HTML")
        with pytest.raises(BadRequest, match=r"(?i)message is not modified: specified new message"):
            await bot.edit_message_text("<b>same</b>", CHAT, sent.message_id, parse_mode="HTML")
        await bot.edit_message_text("same", CHAT, sent.message_id)  # entities differ: fine
        with pytest.raises(BadRequest, match=r"(?i)message to edit not found"):
            await bot.edit_message_text("x", CHAT, sent.message_id + 50)
        with pytest.raises(BadRequest, match=r"(?i)chat not found"):
            await bot.send_message(CHAT + 1, "x")
        with pytest.raises(BadRequest, match=r"(?i)message text is empty"):
            await bot.send_message(CHAT, "<b> </b>", parse_mode="HTML")


async def test_private_chats_and_basic_groups_share_the_bot_account_counter(
    fake: TelegramFake,
) -> None:
    # As on Telegram: one counter for the bot account, whichever private chat or basic
    # group a message is in; a supergroup and a channel each count for themselves.
    basic, other_super = -4711, GROUP - 1
    fake.add_chat(CHAT)
    fake.add_chat(CHAT + 1)
    fake.add_chat(basic, "group")
    fake.add_chat(GROUP, "supergroup")
    fake.add_chat(other_super, "supergroup")
    fake.push_text(CHAT, CHAT, "first")
    async with make_bot(fake) as bot:
        reply = await bot.send_message(CHAT, "second")
        elsewhere = await bot.send_message(CHAT + 1, "same counter")
        fake.push_text(basic, CHAT, "in a basic group", chat_type="group")
        in_super = await bot.send_message(GROUP, "own counter")
        fake.push_text(other_super, CHAT, "another own counter", chat_type="supergroup")
        fake.push_text(CHAT, CHAT, "third")
        after = await bot.send_message(CHAT, "fourth")
    assert (reply.message_id, elsewhere.message_id, after.message_id) == (2, 3, 6)
    assert [m.message_id for m in fake.messages(basic, include_incoming=True)] == [4]
    assert [m.message_id for m in fake.messages(CHAT, include_incoming=True)] == [1, 2, 5, 6]
    assert in_super.message_id == 1
    assert [m.message_id for m in fake.messages(other_super, include_incoming=True)] == [1]


async def test_an_id_of_another_chat_is_not_found_and_a_users_cannot_be_edited(
    fake: TelegramFake,
) -> None:
    # The answers the check of a send in doubt reads, for every edit method it uses.
    fake.add_chat(CHAT)
    fake.add_chat(CHAT + 1)
    fake.push_text(CHAT, CHAT, "the user's")
    users = fake.incoming_ids(CHAT)[-1]
    keyboard = telegram.InlineKeyboardMarkup(
        [[telegram.InlineKeyboardButton("ok", callback_data="ok")]]
    )
    async with make_bot(fake) as bot:
        text = await bot.send_message(CHAT + 1, "other chat's text")
        photo = await bot.send_photo(CHAT + 1, photo=png(8, 8), caption="other chat's photo")
        edits: dict[str, Callable[[int], Awaitable[object]]] = {
            "editMessageText": lambda m: bot.edit_message_text("x", CHAT, m),
            "editMessageCaption": lambda m: bot.edit_message_caption(CHAT, m, caption="x"),
            "editMessageReplyMarkup": lambda m: bot.edit_message_reply_markup(
                CHAT, m, reply_markup=keyboard
            ),
        }
        for method, edit in edits.items():
            for elsewhere in (text.message_id, photo.message_id):
                with pytest.raises(BadRequest) as missing:
                    await edit(elsewhere)
                assert missing.value.message == "Message to edit not found", method
            with pytest.raises(BadRequest) as refused:
                await edit(users)
            assert refused.value.message == "Message can't be edited", method
    assert fake.texts(CHAT + 1) == ["other chat's text", "other chat's photo"]


async def test_editing_tells_a_copy_a_stranger_and_a_gap_apart(fake: TelegramFake) -> None:
    # The three answers a client can use to find out whether a message it sent arrived.
    fake.add_chat(CHAT)
    fake.push_text(CHAT, CHAT, "the user's")
    async with make_bot(fake) as bot:
        sent = await bot.send_message(CHAT, "<i>ours</i>", parse_mode="HTML")
        with pytest.raises(BadRequest) as same:
            await bot.edit_message_text("<i>ours</i>", CHAT, sent.message_id, parse_mode="HTML")
        users_id = fake.incoming_ids(CHAT)[0]
        with pytest.raises(BadRequest) as users:
            await bot.edit_message_text("<i>ours</i>", CHAT, users_id, parse_mode="HTML")
        with pytest.raises(BadRequest) as gap:
            await bot.edit_message_text("<i>ours</i>", CHAT, sent.message_id + 1)
    assert same.value.message == (
        "Message is not modified: specified new message content and reply markup are "
        "exactly the same as a current content and reply markup of the message"
    )
    assert users.value.message == "Message can't be edited"
    assert gap.value.message == "Message to edit not found"
    assert fake.texts(CHAT) == ["ours"]


@pytest.mark.parametrize(
    "html",
    ["<p>para</p>", "<b>open", "<b>x</i>", "1 < 2", "fish & chips", "&nbsp;", "<span>s</span>"],
)
async def test_malformed_html_cannot_be_parsed(fake: TelegramFake, html: str) -> None:
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        with pytest.raises(BadRequest, match=r"(?i)can't parse entities: "):
            await bot.send_message(CHAT, html, parse_mode="HTML")
    assert fake.texts(CHAT) == []


async def test_length_is_counted_in_utf16_units_after_parsing(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        with pytest.raises(BadRequest, match=r"(?i)message is too long"):
            await bot.send_message(CHAT, "😀" * 2049)
        sent = await bot.send_message(CHAT, f"<b>{'😀' * 2048}</b>", parse_mode="HTML")
        with pytest.raises(BadRequest, match=r"(?i)message_too_long"):
            await bot.edit_message_text("a" * 4097, CHAT, sent.message_id)
    assert fake.texts(CHAT) == ["😀" * 2048]


async def test_drafts_actions_commands_and_deletes(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    fake.add_chat(GROUP, "supergroup")
    async with make_bot(fake) as bot:
        assert await bot.send_message_draft(CHAT, 7, "thinking <i>hard</i>", parse_mode="HTML")
        assert await bot.send_message_draft(CHAT, 7, "thinking harder")
        with pytest.raises(BadRequest):
            await bot.send_message_draft(GROUP, 7, "groups have no drafts")
        assert await bot.send_chat_action(CHAT, "typing")
        assert await bot.set_my_commands([("new", "Start over"), ("help", "What I can do")])
        commands = await bot.get_my_commands()
        sent = await bot.send_message(CHAT, "bye")
        assert await bot.delete_message(CHAT, sent.message_id)
    assert fake.drafts(CHAT) == {7: "thinking harder"}
    assert [c.command for c in commands] == ["new", "help"]
    assert fake.texts(CHAT) == []
    assert fake.calls("sendChatAction", chat_id=CHAT)[0].params["action"] == "typing"


# -- faults ------------------------------------------------------------------------


async def test_an_injected_429_raises_retry_after(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    fake.fail_next("sendMessage", 429, retry_after=3)
    async with make_bot(fake) as bot:
        with pytest.raises(RetryAfter) as caught:
            await bot.send_message(CHAT, "flood")
    assert caught.value.retry_after == dt.timedelta(seconds=3)
    assert fake.texts(CHAT) == []
    response = fake.calls("sendMessage")[0].response
    assert response == {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 3",
        "parameters": {"retry_after": 3},
    }


async def test_a_withheld_answer_times_out_yet_the_message_exists(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    fake.timeout_next("sendMessage")
    async with make_bot(fake) as bot:
        with anyio.fail_after(3), pytest.raises(TimedOut):
            await bot.send_message(CHAT, "sent anyway", read_timeout=0.3)
        await bot.send_message(CHAT, "next")
    assert fake.texts(CHAT) == ["sent anyway", "next"]
    assert fake.calls("sendMessage")[0].fault == "timeout"


async def test_a_closed_connection_after_processing_is_a_network_error(
    fake: TelegramFake,
) -> None:
    fake.add_chat(CHAT)
    fake.timeout_next("sendMessage", close=True)
    async with make_bot(fake) as bot:
        with pytest.raises(NetworkError):
            await bot.send_message(CHAT, "sent, answer lost")
    assert fake.texts(CHAT) == ["sent, answer lost"]


async def test_a_dropped_request_is_not_processed(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    fake.drop_next("sendMessage")
    async with make_bot(fake) as bot:
        with pytest.raises(NetworkError):
            await bot.send_message(CHAT, "lost")
    assert fake.texts(CHAT) == []


async def test_a_spared_request_lets_the_fault_hit_the_next_one(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    fake.spare_next("sendMessage")
    fake.drop_next("sendMessage")
    async with make_bot(fake) as bot:
        await bot.send_message(CHAT, "spared")
        with pytest.raises(NetworkError):
            await bot.send_message(CHAT, "dropped")
    assert fake.texts(CHAT) == ["spared"]
    assert [c.fault for c in fake.calls("sendMessage")] == [None, "drop"]


async def test_polling_recovers_after_repeated_drops(fake: TelegramFake) -> None:
    update_id = fake.push_text(CHAT, CHAT, "still here")
    fake.drop_next("getUpdates", times=3)
    failures = 0
    async with make_bot(fake) as bot:
        while True:
            try:
                updates = await bot.get_updates()
                break
            except NetworkError:
                failures += 1
                assert failures <= 3
    assert failures == 3
    assert [u.update_id for u in updates] == [update_id]
    assert [c.fault for c in fake.calls("getUpdates")] == ["drop", "drop", "drop", None]


async def test_bad_gateway_is_a_network_error(fake: TelegramFake) -> None:
    async with make_bot(fake) as bot:
        fake.fail_next(None, 502)
        with pytest.raises(NetworkError, match="Bad Gateway"):
            await bot.get_webhook_info()


@pytest.mark.parametrize(
    ("code", "description"),
    [
        (500, "Internal Server Error"),
        (502, "Bad Gateway"),
        (503, "Service Unavailable"),
        (504, "Gateway Timeout"),
    ],
)
@pytest.mark.parametrize("applied", [False, True], ids=["not-applied", "applied"])
async def test_server_errors_carry_telegrams_body_and_may_be_applied(
    fake: TelegramFake, code: int, description: str, *, applied: bool
) -> None:
    fake.add_chat(CHAT)
    fake.fail_next("sendMessage", code, applied=applied)
    async with make_bot(fake) as bot:
        with pytest.raises(NetworkError, match=description):
            await bot.send_message(CHAT, "maybe")
    (call,) = fake.calls("sendMessage")
    assert call.status == code
    assert call.response == {"ok": False, "error_code": code, "description": description}
    assert fake.texts(CHAT) == (["maybe"] if applied else [])


async def test_a_stalled_request_times_out_and_is_never_applied(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    fake.stall_next("sendMessage")
    async with make_bot(fake) as bot:
        with anyio.fail_after(3), pytest.raises(TimedOut):
            await bot.send_message(CHAT, "never", read_timeout=0.2)
        await bot.send_message(CHAT, "next")
    assert fake.texts(CHAT) == ["next"]
    assert [c.fault for c in fake.calls("sendMessage")] == ["stall", None]


async def test_the_user_can_write_while_a_request_is_in_doubt(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    fake.timeout_next("sendMessage", close=True, user_says="meanwhile")
    async with make_bot(fake) as bot:
        with pytest.raises(NetworkError):
            await bot.send_message(CHAT, "in doubt")
        updates = await bot.get_updates()
    assert [u.message.text for u in updates if u.message] == ["meanwhile"]
    stored = fake.messages(CHAT, include_incoming=True)
    assert [(m.message_id, m.from_bot, m.text) for m in stored] == [
        (1, False, "meanwhile"),
        (2, True, "in doubt"),
    ]


async def test_refused_connections_fail_to_connect_then_recover(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        await bot.send_message(CHAT, "before")  # a kept-alive connection exists now
        fake.refuse_connections(0.5)
        with pytest.raises(NetworkError) as refused:
            await bot.send_message(CHAT, "refused")
        assert isinstance(refused.value.__cause__, httpx.ConnectError)
        await anyio.sleep(0.6)  # the window passes
        await bot.send_message(CHAT, "after")
    assert fake.texts(CHAT) == ["before", "after"]


async def test_a_waiting_poll_ends_when_cancelled_as_it_is_woken() -> None:
    # refuse_connections cancels each connection's task and waits for it to end. Here
    # the wake-up (a change in the fake) and the cancellation land in the same loop
    # turn: the poll must end all the same, or the port is never listened on again.
    loop = asyncio.get_running_loop()

    def call_soon(callback: Callable[[], object]) -> None:
        loop.call_soon(callback)

    poll = LongPoll(UpdateQueue(1), threading.RLock(), lambda: None, call_soon)
    waiting = asyncio.ensure_future(poll.get_updates({"timeout": 30}))
    await asyncio.sleep(0)  # the poll starts, and waits
    assert poll.waiting
    poll.wake()
    loop.call_soon(waiting.cancel)
    done, _ = await asyncio.wait([waiting], timeout=2)
    assert waiting in done, "the cancelled poll went on waiting"
    assert waiting.cancelled()
    assert not poll.waiting


# -- flood control -----------------------------------------------------------------


async def test_bursts_beyond_the_chat_rate_get_429_and_ignoring_it_is_recorded() -> None:
    with TelegramFake(per_chat_interval=60, burst=2) as fake:
        fake.add_chat(CHAT)
        fake.add_chat(CHAT + 1)
        async with make_bot(fake) as bot:
            await bot.send_message(CHAT, "one")
            await bot.send_message(CHAT, "two")
            with pytest.raises(RetryAfter) as caught:
                await bot.edit_message_text("three", CHAT, 1)
            retry_after = caught.value.retry_after
            assert isinstance(retry_after, dt.timedelta)
            assert retry_after >= dt.timedelta(seconds=1)
            assert fake.retry_after_violations == []
            await bot.send_message(CHAT + 1, "other chats are unaffected")
            assert await bot.send_message_draft(CHAT + 1, 1, "drafts have their own bucket")
            with pytest.raises(RetryAfter):
                await bot.send_message(CHAT, "too soon")
        violations = fake.retry_after_violations
    assert [(v.method, v.chat_id) for v in violations] == [("sendMessage", CHAT)]
    assert violations[0].at < violations[0].allowed_at
    assert fake.texts(CHAT) == ["one", "two"]


async def test_waiting_out_retry_after_is_no_violation(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    fake.fail_next("sendMessage", 429, retry_after=1)
    async with make_bot(fake) as bot:
        with pytest.raises(RetryAfter) as caught:
            await bot.send_message(CHAT, "first try")
        retry_after = caught.value.retry_after
        assert isinstance(retry_after, dt.timedelta)
        await anyio.sleep(retry_after.total_seconds())  # the client honouring it
        await bot.send_message(CHAT, "second try")
    assert fake.retry_after_violations == []
    assert fake.texts(CHAT) == ["second try"]


async def test_the_global_cap_applies_across_chats() -> None:
    with TelegramFake(per_chat_interval=0, global_per_second=1) as fake:
        fake.add_chat(CHAT)
        fake.add_chat(CHAT + 1)
        async with make_bot(fake) as bot:
            await bot.send_message(CHAT, "one")
            with pytest.raises(RetryAfter):
                await bot.send_message(CHAT + 1, "two")


# -- waiting -----------------------------------------------------------------------


async def test_wait_for_wakes_on_a_change_and_times_out_otherwise(fake: TelegramFake) -> None:
    fake.add_chat(CHAT)
    async with make_bot(fake) as bot:
        with anyio.fail_after(3):
            async with anyio.create_task_group() as tg:
                tg.start_soon(bot.send_message, CHAT, "arrives")
                seen = await fake.wait_for(lambda: fake.texts(CHAT))
    assert seen == ["arrives"]
    with pytest.raises(TimeoutError):
        await fake.wait_for(lambda: fake.texts(CHAT + 1), timeout=0.05)


def test_wait_for_blocking_from_a_thread() -> None:
    with TelegramFake() as fake:
        fake.push_text(CHAT, CHAT, "hi")
        assert fake.wait_for_blocking(lambda: fake.pending_update_count == 1, timeout=1)
        with pytest.raises(TimeoutError):
            fake.wait_for_blocking(lambda: fake.pending_update_count == 2, timeout=0.05)


# -- the HTML checker on its own ---------------------------------------------------


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<b>b</b><strong>s</strong><i>i</i><em>e</em><u>u</u><ins>n</ins>", "bsieun"),
        ("<s>s</s><strike>k</strike><del>d</del><tg-spoiler>p</tg-spoiler>", "skdp"),
        ('<span class="tg-spoiler">x</span><a href="https://e.org">l</a>', "xl"),
        ('<pre><code class="language-py">x = 1</code></pre><code>c</code>', "x = 1c"),
        ("<blockquote>q</blockquote><blockquote expandable>w</blockquote>", "qw"),
        ("&lt;&gt;&amp;&quot;&#33;&#x1F600;", '<>&"!😀'),
    ],
)
def test_supported_html(html: str, text: str) -> None:
    assert parse_html(html).text == text


def test_html_entities_carry_utf16_offsets() -> None:
    parsed = parse_html('😀 <pre><code class="language-python">x</code></pre>')
    assert parsed.entities == ({"type": "pre", "language": "python", "offset": 3, "length": 1},)


@pytest.mark.parametrize(
    ("html", "detail"),
    [
        ("é<p>", 'Unsupported start tag "p" at byte offset 2'),
        ("<b>x</i>", 'Unmatched end tag at byte offset 4, expected "</b>", found "</i>"'),
        ("</b>", "Unexpected end tag at byte offset 0"),
        ("<i>x", 'Can\'t find end tag corresponding to start tag "i"'),
        ("a <", "Unclosed start tag at byte offset 2"),
        ("&amp b", 'Unsupported HTML entity "&amp" at byte offset 0'),
    ],
)
def test_unsupported_html(html: str, detail: str) -> None:
    with pytest.raises(HtmlError) as caught:
        parse_html(html)
    assert str(caught.value) == detail
