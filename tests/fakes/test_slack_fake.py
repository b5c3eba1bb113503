"""The Slack fake is as strict as Slack: its refusals, with Slack's codes, through the
real slack-sdk client; 429 with Retry-After; Socket Mode tickets, acks and retries."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import aiohttp
import anyio
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.fakes.slack_api import SlackFake
from tests.fakes.slack_limits import IN_FLIGHT, RateLimits
from tests.slack.harness import tokens

pytestmark = pytest.mark.anyio
USER = "U0PERSON"


@pytest.fixture
def fake() -> Iterator[SlackFake]:
    bot, app = tokens()
    with SlackFake(bot, app, scale=6000.0) as f:  # limits only where a test asks
        yield f


@pytest.fixture
async def client(fake: SlackFake) -> AsyncIterator[AsyncWebClient]:
    web = AsyncWebClient(token=fake.bot_token, base_url=fake.base_url, retry_handlers=[])
    yield web
    if web.session is not None:
        await web.session.close()


async def refused(call: object) -> str:
    with pytest.raises(SlackApiError) as caught:
        await call  # type: ignore[misc]
    return str(caught.value.response["error"])


async def test_tokens_are_checked(fake: SlackFake) -> None:
    none = AsyncWebClient(base_url=fake.base_url, retry_handlers=[])
    wrong = AsyncWebClient(token="xoxb-wrong", base_url=fake.base_url, retry_handlers=[])
    app = AsyncWebClient(token=fake.app_token, base_url=fake.base_url, retry_handlers=[])
    dm = fake.dm(USER)
    assert await refused(none.chat_postMessage(channel=dm, text="x")) == "not_authed"
    assert await refused(wrong.chat_postMessage(channel=dm, text="x")) == "invalid_auth"
    assert await refused(app.chat_postMessage(channel=dm, text="x")) == "not_allowed_token_type"
    bot = AsyncWebClient(token=fake.bot_token, base_url=fake.base_url, retry_handlers=[])
    assert await refused(bot.apps_connections_open(app_token=fake.bot_token)) == (
        "not_allowed_token_type"
    )


async def test_post_message_refusals(fake: SlackFake, client: AsyncWebClient) -> None:
    dm = fake.dm(USER)
    fake.join("C0NOBOT", USER, bot=False)
    assert await refused(client.chat_postMessage(channel="C0NONE", text="x")) == (
        "channel_not_found"
    )
    assert await refused(client.chat_postMessage(channel="C0NOBOT", text="x")) == ("not_in_channel")
    empty = client.api_call("chat.postMessage", json={"channel": dm, "text": ""})
    assert await refused(empty) == "no_text"
    assert await refused(client.chat_postMessage(channel=dm, text="x" * 40_001)) == ("msg_too_long")
    conflict = client.api_call(
        "chat.postMessage", json={"channel": dm, "text": "a", "markdown_text": "b"}
    )
    assert await refused(conflict) == "markdown_text_conflict"
    bad_meta = client.chat_postMessage(channel=dm, text="a", metadata={"event_type": "x"})
    assert await refused(bad_meta) == "invalid_metadata_format"
    big_section = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
    assert await refused(client.chat_postMessage(channel=dm, text="a", blocks=big_section)) == (
        "invalid_blocks"
    )
    nothread = client.chat_postMessage(channel=dm, text="a", thread_ts="1.000001")
    assert await refused(nothread) == "invalid_thread_ts"
    assert fake.messages(dm) == []


async def test_update_refusals(fake: SlackFake, client: AsyncWebClient) -> None:
    dm = fake.dm(USER)
    theirs = fake.say(USER, "mine")
    assert await refused(client.chat_update(channel=dm, ts="1.000001", text="x")) == (
        "message_not_found"
    )
    assert await refused(client.chat_update(channel=dm, ts=theirs, text="x")) == (
        "cant_update_message"
    )


async def test_a_429_names_its_retry_after(fake: SlackFake, client: AsyncWebClient) -> None:
    dm = fake.dm(USER)
    fake.rate_limit_next("chat.postMessage", 2, channel=dm)
    with pytest.raises(SlackApiError) as caught:
        await client.chat_postMessage(channel=dm, text="x")
    assert caught.value.response.status_code == 429
    assert caught.value.response["error"] == "ratelimited"
    assert caught.value.response.headers["Retry-After"] == "2"
    with pytest.raises(SlackApiError):  # may have been in flight already: answered 429
        await client.chat_postMessage(channel=dm, text="at once")
    assert not fake.limits.violations, "sent before its client could know"
    await anyio.sleep(IN_FLIGHT * 2)
    with pytest.raises(SlackApiError):
        await client.chat_postMessage(channel=dm, text="too soon")
    assert fake.limits.violations, "a call inside the Retry-After is recorded"


def test_an_asked_429_goes_to_the_next_call_however_late_it_comes() -> None:
    """A test's flood signal is the next call's answer, not a window from when the test
    asked for it: on a loaded machine the next post may come after such a window had
    passed, and the case then tested nothing (the contract's flood wait mid-stream)."""
    now = [100.0]
    limits = RateLimits(scale=60.0, clock=lambda: now[0])
    limits.block("chat.postMessage", "D1", 1)
    now[0] += 5.0  # the next post, long after the test asked
    assert limits.check("chat.postMessage", "D2") is None, "another channel's bucket"
    assert limits.check("chat.postMessage", "D1") == 1
    assert limits.limited == ["chat.postMessage"]
    now[0] += 0.5
    assert limits.check("chat.postMessage", "D1") == 1, "refused until its Retry-After"
    assert limits.violations, "a call inside the Retry-After is recorded"
    now[0] += 1.0
    assert limits.check("chat.postMessage", "D1") is None
    assert limits.check("chat.postMessage", "D1") is None, "asked once: the next 429 only"


async def test_a_json_body_to_a_form_only_method_is_not_read(
    fake: SlackFake, client: AsyncWebClient
) -> None:
    dm = fake.dm(USER)
    as_json = client.api_call("conversations.history", json={"channel": dm})
    assert await refused(as_json) == "channel_not_found"
    as_form = await client.api_call("conversations.history", data={"channel": dm})
    assert as_form["messages"] == []


async def test_streaming_refusals(fake: SlackFake, client: AsyncWebClient) -> None:
    dm = fake.dm(USER)
    root = fake.say(USER, "question")
    fake.join("C0ROOM", USER)
    room_root = fake.say(USER, "in a room", channel="C0ROOM")
    norecipient = client.chat_startStream(channel="C0ROOM", thread_ts=room_root)
    assert await refused(norecipient) == "invalid_arguments"
    started = await client.chat_startStream(channel=dm, thread_ts=root, markdown_text="Hi")
    ts = started["ts"]
    assert await refused(client.chat_update(channel=dm, ts=ts, text="x")) == ("cant_update_message")
    await client.chat_appendStream(channel=dm, ts=ts, markdown_text=" there")
    await client.chat_stopStream(channel=dm, ts=ts)
    assert await refused(client.chat_appendStream(channel=dm, ts=ts, markdown_text="!")) == (
        "message_not_in_streaming_state"
    )
    assert fake.texts(dm) == ["Hi there"]
    fake.web.streaming_supported = False
    assert await refused(client.chat_startStream(channel=dm, thread_ts=root)) == (
        "feature_not_enabled"
    )


async def test_file_upload_v2_and_a_size_mismatch(fake: SlackFake, client: AsyncWebClient) -> None:
    dm = fake.dm(USER)
    done = await client.files_upload_v2(channel=dm, filename="a.txt", content=b"abc")
    file_id = done["file"]["id"]
    assert fake.workspace.files[file_id].data == b"abc"
    (shared,) = fake.messages(dm)
    assert shared.files == [file_id]
    got = await client.files_getUploadURLExternal(filename="b.txt", length=10)
    async with (
        aiohttp.ClientSession() as session,
        session.post(got["upload_url"], data=b"short") as response,
    ):
        assert response.status == 200
    complete = client.files_completeUploadExternal(files=[{"id": got["file_id"]}])
    assert await refused(complete) == "file_upload_size_mismatch"


async def test_a_download_needs_the_bot_token(fake: SlackFake) -> None:
    fake.say(USER, "file", files=[("n.txt", "text/plain", b"secret notes")])
    (file,) = fake.workspace.files.values()
    url = f"{fake.root}/files-pri/{file.id}/{file.name}"
    async with aiohttp.ClientSession() as session:
        async with session.get(url) as anonymous:
            assert anonymous.status == 200
            assert anonymous.content_type == "text/html", "Slack's sign-in page"
        headers = {"Authorization": f"Bearer {fake.bot_token}"}
        async with session.get(url, headers=headers) as signed:
            assert await signed.read() == b"secret notes"


async def test_socket_mode_tickets_acks_and_retries(fake: SlackFake) -> None:
    fake.socket.ack_timeout = 0.2
    app = AsyncWebClient(base_url=fake.base_url, retry_handlers=[])
    url = (await app.apps_connections_open(app_token=fake.app_token))["url"]
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url) as ws:
            hello = json.loads((await ws.receive()).data)
            assert hello["type"] == "hello"
            fake.say(USER, "hi")
            first = json.loads((await ws.receive()).data)
            assert (first["type"], first["retry_attempt"], first["retry_reason"]) == (
                "events_api",
                0,
                "",
            )
            again = json.loads((await ws.receive()).data)  # not acked within the window
            assert again["envelope_id"] == first["envelope_id"]
            assert (again["retry_attempt"], again["retry_reason"]) == (1, "timeout")
            await ws.send_str(json.dumps({"envelope_id": first["envelope_id"]}))
            await fake.wait_for(lambda: all(e.acked for e in fake.socket.envelopes.values()))
        with pytest.raises(aiohttp.WSServerHandshakeError):
            await session.ws_connect(url)  # a ticket is good for one connection


async def test_history_is_strict_newest_first_paged_and_without_thread_replies(
    fake: SlackFake, client: AsyncWebClient
) -> None:
    fake.join("C0TALK", USER)
    fake.join("C0NOBOT", USER, bot=False)
    said = [fake.say(USER, f"m{i}", channel="C0TALK", heard=False) for i in range(5)]
    fake.say(USER, "a reply", channel="C0TALK", thread_ts=said[1], heard=False)
    history = client.conversations_history
    assert await refused(history(channel="C0NONE")) == "channel_not_found"
    assert await refused(history(channel="C0NOBOT")) == "not_in_channel"
    assert await refused(history(channel="C0TALK", limit=1000)) == "invalid_limit"
    first = await history(channel="C0TALK", oldest=said[0], limit=2)
    assert [m["text"] for m in first["messages"]] == ["m4", "m3"], "newest first, oldest out"
    assert first["has_more"] is True
    cursor = first["response_metadata"]["next_cursor"]
    rest = await history(channel="C0TALK", oldest=said[0], limit=2, cursor=cursor)
    assert [m["text"] for m in rest["messages"]] == ["m2", "m1"]
    assert rest["messages"][1]["reply_count"] == 1, "the reply is not in it; its parent is"
    assert rest["has_more"] is False
    assert rest["response_metadata"]["next_cursor"] == ""
    both = await history(channel="C0TALK", oldest=said[0], latest=said[2], inclusive=True)
    assert [m["text"] for m in both["messages"]] == ["m2", "m1", "m0"]
    fake.workspace.scopes.discard("channels:history")
    with pytest.raises(SlackApiError) as caught:
        await history(channel="C0TALK")
    assert caught.value.response["error"] == "missing_scope"
    assert caught.value.response["needed"] == "channels:history"


async def test_an_unlisted_apps_history_is_15_a_page_and_1_call_a_minute(
    fake: SlackFake, client: AsyncWebClient
) -> None:
    fake.limits.unlisted = True
    fake.join("C0TALK", USER)
    for i in range(20):
        fake.say(USER, f"m{i}", channel="C0TALK", heard=False)
    page = await client.conversations_history(channel="C0TALK", limit=100)
    assert len(page["messages"]) == 15
    assert page["has_more"] is True
    assert fake.limits.per_minute("conversations.history") == 1.0
    assert fake.limits.per_minute("conversations.replies") == 1.0
