"""A local HTTP server that speaks the Telegram Bot API, for tests over real sockets.

    with TelegramFake() as fake:                       # or TelegramFake(token=..., ...)
        bot = telegram.Bot(fake.token, base_url=fake.base_url + "/bot")
        fake.push_text(chat_id=42, user_id=42, text="/start")   # -> update_id
        ...                                            # the code under test polls, replies
        await fake.wait_for(lambda: fake.texts(42) == ["Hello!"], timeout=5)

The server runs on 127.0.0.1 in a thread with its own event loop, so any test can use
it, sync or async; every method is thread-safe. Only `token` is accepted (another one
gets 401 Unauthorized); an unknown method gets 404 Not Found.

The world (test side)
    add_chat(chat_id, chat_type="private", *, title, username, first_name, is_forum)
    add_topic(chat_id, thread_id)   (and telegram_groups: open_topic, push_group_text)
    push_text(chat_id, user_id, text, *, chat_type="private", username, first_name,
              entities) -> update_id        (/commands get their bot_command entities)
    push_message(chat_id, user_id, *, kind="photo"|"sticker"|"voice"|"document"|"text",
                 text, caption, chat_type, username, first_name, title, content) -> update_id
    push_edit(chat_id, message_id, text) -> update_id   (the user edits their message:
                 edited_message, and replies to it from then on quote it as edited)
    push_update(kind, payload) -> update_id      (any other update type, as given; an
                 edited_message / edited_channel_post edits the stored message too)
    set_webhook(url or None)
  Channel posts (chat_type="channel") arrive as "channel_post" updates.

Methods served: getMe, getUpdates, sendMessage, editMessageText, sendMessageDraft,
sendChatAction, deleteMessage, setMyCommands, getMyCommands, setWebhook,
deleteWebhook, getWebhookInfo, answerCallbackQuery, editMessageReplyMarkup (inline
keyboards and button presses: telegram_callbacks; `press_button(chat_id, user_id,
message_id, data)` -> (update_id, query_id), `callback_answer(query_id)`,
`expire_callback(query_id)`); sendPhoto and editMessageCaption (telegram_photos);
groups, forum topics and message_thread_id (telegram_groups). getUpdates long-polls
for real: `offset` confirms,
`timeout` holds the request until an update arrives, `limit`, `allowed_updates`. As
on Telegram, a newer getUpdates ends the one still waiting with 409 "Conflict:
terminated by other getUpdates request; ..."; with a webhook set it is 409 too.
Error wording is Telegram's ("message is not modified: ...", "can't parse entities:
...", "message is too long" (sendMessage) / "MESSAGE_TOO_LONG" (editMessageText),
"message text is empty", "chat not found", "message to edit not found", "message can't
be edited" (a user's message)). Message ids are numbered as on Telegram: one counter
for the bot account, which every message in every private chat and basic group draws
from (the user's and the bot's alike), and one counter per supergroup and per channel;
so a private chat's ids are not contiguous while others talk to the bot. An id of
another chat's message answers "message to edit not found" (see telegram_state).

Inspection
    calls(method=None, chat_id=None) -> [RecordedCall]   (method, params, at, status,
                                            response, fault), in order of arrival
    messages(chat_id, *, include_incoming=False) -> [StoredMessage]  (as they stand now:
                                            .text visible, .raw_text as sent, .history)
    texts(chat_id) -> [str]                 the bot's messages as a user sees them now
    drafts(chat_id) -> {draft_id: visible text}
    acknowledged_offset, pending_update_count, polling, webhook_url,
    retry_after_violations
    await wait_for(predicate, timeout) / wait_for_blocking(predicate, timeout)
                                            -> the predicate's truthy value, woken by
                                            every change (no sleeping); TimeoutError

Faults (queued, first match wins; `method=None` matches any method, getUpdates too)
    fail_next(method, error=429, *, retry_after=3, description=None, times=1,
              applied=False, answer_after=0.0)
        answer with that error instead of processing (429 carries parameters.retry_after;
        5xx carry Telegram's JSON body) -- or, with applied=True, after processing;
        answer_after delays the answer that long after the call is recorded
    timeout_next(method, *, times=1, close=False)
        process the request, then never answer (until the client gives up and closes,
        or the fake stops) -- or, with close=True, close the connection at once
    drop_next(method, *, times=1)
        close the connection without processing the request
    stall_next(method, *, times=1)
        never answer and never process the request (the client's timeout ends it)
    spare_next(method, *, times=1)
        serve the next matching requests as usual (a fault queued after hits a later one)
    every one but fail_next also takes user_says="...": the chat's user posts that text
        just before the request is handled (it takes the next message id); timeout_next,
        drop_next and fail_next take others_say={chat_id: text}: posted in other chats
        just before, taking their ids first
    refuse_connections(seconds)
        close every connection and refuse new ones for that long (nothing listens)

The modules behind it, one idea each: telegram_server (thread, loop, connections),
telegram_http (HTTP/1.1), telegram_wire (parameters, errors), telegram_updates
(update queue), telegram_polling (getUpdates), telegram_state (chats, messages,
methods), telegram_html (HTML parse mode), telegram_limits (flood control),
telegram_faults, telegram_content.

Flood control (see telegram_limits): per chat `per_chat_interval` seconds per message
with `burst` tolerated, drafts in their own bucket, `global_per_second` overall; 0
turns a limit off. Every retry_after handed out, injected or earned, closes its scope
until it has passed; requests into a closed scope land in `retry_after_violations`.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import unquote

import anyio

from tests.fakes.telegram_callbacks import CallbackQueries
from tests.fakes.telegram_content import command_entities, media, sender
from tests.fakes.telegram_faults import Fault, FaultKind, FaultQueue
from tests.fakes.telegram_files import FILE_PATH, FileStore
from tests.fakes.telegram_http import BadHttpRequestError, HttpRequest
from tests.fakes.telegram_limits import FloodControl, RetryAfterViolation
from tests.fakes.telegram_polling import LongPoll
from tests.fakes.telegram_server import Outcome, ServerThread
from tests.fakes.telegram_state import BotWorld, Chat, StoredMessage
from tests.fakes.telegram_updates import UpdateQueue, Webhook
from tests.fakes.telegram_webhook import WebhookDelivery
from tests.fakes.telegram_wire import (
    ApiError,
    Json,
    bad_request,
    canonical_method,
    coerce_params,
    too_many_requests,
)

__all__ = ["RecordedCall", "RetryAfterViolation", "StoredMessage", "TelegramFake"]

T = TypeVar("T")

EDITS = ("edited_message", "edited_channel_post")
_PATH = re.compile(r"/bot([^/]+)/([A-Za-z]+)/?")


@dataclass(frozen=True)
class RecordedCall:
    method: str
    params: Json
    at: float  # time.monotonic() when the request arrived
    status: int | None  # HTTP status answered; None if the connection was closed instead
    response: Json | None  # the answer, or what it would have been (timeout faults)
    fault: str | None = None  # "fail", "timeout", "close", "drop" or "stall" when injected

    @property
    def chat_id(self) -> Any:
        return self.params.get("chat_id")


class TelegramFake:
    def __init__(
        self,
        token: str | None = None,
        *,
        per_chat_interval: float = 1.0,
        burst: int = 3,
        global_per_second: float = 30.0,
        bot_username: str = "thalos_test_bot",
        bot_name: str = "Thalos Test",
        first_update_id: int = 1001,
    ) -> None:
        self.token = token if token is not None else ":".join(("123456", "TEST-token-not-real"))
        bot_id = self.token.split(":", 1)[0]
        self.bot_user: Json = {
            "id": int(bot_id) if bot_id.isdigit() else 123456,
            "is_bot": True,
            "first_name": bot_name,
            "username": bot_username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }
        self._lock = threading.RLock()
        self._condition = threading.Condition(self._lock)
        self._queue = UpdateQueue(first_update_id)
        self._world = BotWorld(self.bot_user, self._queue)
        self.callbacks = CallbackQueries(self._world)
        self._world.add_handlers(self.callbacks.handlers())
        self._flood = FloodControl(per_chat_interval, burst, global_per_second)
        self._faults = FaultQueue()
        self._calls: list[RecordedCall] = []
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._serial = 0
        self.files = FileStore()
        """getFile and downloads (see telegram_files); ``files.downloads`` lists them."""
        self._server = ServerThread(self._serve, on_closed=self._connection_closed)
        self._poll = LongPoll(self._queue, self._lock, self._changed, self._server.call_soon)
        self.webhooks = WebhookDelivery(self._queue, self._lock, self._changed)
        """Deliveries while a webhook is set (see telegram_webhook): ``route`` it first."""

    # -- lifecycle ---------------------------------------------------------------

    def __enter__(self) -> TelegramFake:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        self._server.start()
        self._server.call_soon(self.webhooks.start)

    def stop(self) -> None:
        self.files.served.set()  # no download left waiting in a thread
        self._server.call_soon(self.webhooks.cancel)
        self._server.stop()

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT -- give PTB `base_url=fake.base_url + "/bot"`."""
        return f"http://127.0.0.1:{self._server.port}"

    # -- the world ---------------------------------------------------------------

    def add_chat(
        self,
        chat_id: int,
        chat_type: str = "private",
        *,
        title: str | None = None,
        username: str | None = None,
        first_name: str | None = None,
        is_forum: bool = False,
    ) -> None:
        if chat_type != "private" and title is None:
            title = f"Test {chat_type} {chat_id}"
        if chat_type == "private" and first_name is None:
            first_name = "Test"
        with self._lock:
            chat = Chat(chat_id, chat_type, title, username, first_name, is_forum)
            self._world.add_chat(chat)
            self._changed()

    def add_topic(self, chat_id: int, thread_id: int) -> None:
        """A forum topic exists in the chat (see telegram_groups.open_topic)."""
        with self._lock:
            self._world.topics.setdefault(chat_id, set()).add(thread_id)

    def push_text(
        self,
        chat_id: int,
        user_id: int | None,
        text: str,
        *,
        chat_type: str = "private",
        username: str | None = None,
        first_name: str = "Test",
        entities: list[Json] | None = None,
    ) -> int:
        if entities is None:
            entities = command_entities(text)
        content: Json = {"text": text}
        if entities:
            content["entities"] = entities
        return self.push_message(
            chat_id,
            user_id,
            chat_type=chat_type,
            username=username,
            first_name=first_name,
            content=content,
        )

    def push_message(
        self,
        chat_id: int,
        user_id: int | None,
        *,
        kind: str = "text",
        text: str | None = None,
        caption: str | None = None,
        chat_type: str = "private",
        username: str | None = None,
        first_name: str = "Test",
        title: str | None = None,
        content: Mapping[str, Any] | None = None,
    ) -> int:
        """A message from user_id in chat_id; `content` replaces the built-in content."""
        with self._lock:
            self._serial += 1
            body = media(kind, self._serial, text, caption) if content is None else dict(content)
            known = self._world.chats.get(chat_id)
            if known is not None and known.type == chat_type:
                chat = known
            elif chat_type == "private":
                chat = Chat(chat_id, chat_type, username=username, first_name=first_name)
            else:
                title = title or f"Test {chat_type} {chat_id}"
                chat = Chat(chat_id, chat_type, title, username if chat_type == "channel" else None)
            user = None
            if chat_type != "channel" and user_id is not None:
                user = sender(user_id, first_name, username)
            message = self._world.add_incoming(chat, user, body)
            update_kind = "channel_post" if chat_type == "channel" else "message"
            update_id = self._queue.push(update_kind, message)
            self._changed()
            return update_id

    def push_photo(
        self,
        chat_id: int,
        user_id: int,
        data: bytes,
        *,
        caption: str | None = None,
        media_group_id: str | None = None,
        reported_size: int | None = None,
        reply_to: int | None = None,
    ) -> int:
        """A photo as Telegram sends it, in two sizes (both ``data``; ``reported_size``
        is the file size both claim)."""
        with self._lock:
            self._serial += 1
            serial = self._serial
        small = self._file(f"photo-{serial}-s", data, reported_size)  # same image, "smaller"
        full = self._file(f"photo-{serial}", data, reported_size)
        body: Json = {
            "photo": [
                {**small, "width": 90, "height": 60},
                {**full, "width": 1280, "height": 960},
            ]
        }
        return self._push_with(chat_id, user_id, body, caption, media_group_id, reply_to)

    def push_document(
        self,
        chat_id: int,
        user_id: int,
        data: bytes,
        *,
        file_name: str,
        mime_type: str | None,
        caption: str | None = None,
        media_group_id: str | None = None,
        reported_size: int | None = None,
        reply_to: int | None = None,
    ) -> int:
        with self._lock:
            self._serial += 1
            serial = self._serial
        document: Json = {
            **self._file(f"doc-{serial}", data, reported_size),
            "file_name": file_name,
        }
        if mime_type is not None:
            document["mime_type"] = mime_type
        body: Json = {"document": document}
        return self._push_with(chat_id, user_id, body, caption, media_group_id, reply_to)

    def push_voice(self, chat_id: int, user_id: int, data: bytes, *, duration: int = 3) -> int:
        with self._lock:
            self._serial += 1
            serial = self._serial
        voice = {**self._file(f"voice-{serial}", data, None), "duration": duration}
        body: Json = {"voice": {**voice, "mime_type": "audio/ogg"}}
        return self._push_with(chat_id, user_id, body, None, None, None)

    def push_edit(self, chat_id: int, message_id: int, text: str) -> int:
        """The user edits their message ``message_id`` to ``text`` (its caption, for a
        file): an ``edited_message`` update with the whole message as it now stands."""
        with self._lock:
            stored = self._world.stored_message(chat_id, message_id)
            if stored is None or stored.from_bot:
                raise ValueError(f"no message a user posted: {chat_id}/{message_id}")
            field = "text" if stored.kind == "text" else "caption"
            dropped = {field, "entities", "caption_entities"}
            payload = {k: v for k, v in stored.payload.items() if k not in dropped}
            payload |= {field: text, "edit_date": int(time.time())}
            chat_type = self._world.chats[chat_id].type
        kind = "edited_channel_post" if chat_type == "channel" else "edited_message"
        return self.push_update(kind, payload)

    def push_reply(self, chat_id: int, user_id: int, text: str, *, reply_to: int) -> int:
        """A text message replying to message ``reply_to`` of the chat."""
        return self._push_with(chat_id, user_id, {"text": text}, None, None, reply_to)

    def _file(self, name: str, data: bytes, reported_size: int | None) -> Json:
        size = len(data) if reported_size is None else reported_size
        with self._lock:
            file = self.files.add(f"fake-{name}", f"u-{name}", data, f"files/{name}", size)
        return {"file_id": file.file_id, "file_unique_id": file.file_unique_id, "file_size": size}

    def _push_with(
        self,
        chat_id: int,
        user_id: int,
        body: Json,
        caption: str | None,
        media_group_id: str | None,
        reply_to: int | None,
    ) -> int:
        if caption is not None:
            body["caption"] = caption
        if media_group_id is not None:
            body["media_group_id"] = media_group_id
        if reply_to is not None:
            with self._lock:
                replied = next(
                    m.payload
                    for m in self.messages(chat_id, include_incoming=True)
                    if m.message_id == reply_to
                )
            body["reply_to_message"] = {k: v for k, v in replied.items() if k != "reply_to_message"}
        return self.push_message(chat_id, user_id, content=body)

    def incoming_ids(self, chat_id: int) -> list[int]:
        """The ids of the messages users posted in the chat, oldest first."""
        return [
            m.message_id for m in self.messages(chat_id, include_incoming=True) if not m.from_bot
        ]

    def push_update(self, kind: str, payload: Json) -> int:
        """Queue any update as given, e.g. push_update("callback_query", {...}). An
        ``edited_message`` (or ``edited_channel_post``) also changes the stored message,
        as on Telegram: a reply to it afterwards quotes it as edited."""
        with self._lock:
            if kind in EDITS:
                self._world.edit_incoming(payload)
            update_id = self._queue.push(kind, payload)
            self._changed()
            return update_id

    def press_button(
        self,
        chat_id: int,
        user_id: int,
        message_id: int,
        data: str,
        *,
        first_name: str = "Test",
        stale: bool = False,
    ) -> tuple[int, str]:
        """A user presses the inline button carrying ``data`` on the bot's message:
        a ``callback_query`` update; returns (update_id, callback query id). With
        ``stale``, the button may be one an earlier version of the message had (a
        client that has not redrawn yet: a duplicate or late press)."""
        with self._lock:
            payload, query_id = self.callbacks.press(
                chat_id, user_id, message_id, data, first_name, stale=stale
            )
            update_id = self._queue.push("callback_query", payload)
            self._changed()
            return update_id, query_id

    def callback_answer(self, query_id: str) -> Json | None:
        """The bot's answerCallbackQuery parameters for that query, or None."""
        with self._lock:
            return self.callbacks.queries[query_id].answered

    def expire_callback(self, query_id: str) -> None:
        with self._lock:
            self.callbacks.expire(query_id)

    def set_webhook(self, url: str | None) -> None:
        with self._lock:
            self._queue.webhook = Webhook(url) if url else None
            self._changed()

    # -- inspection --------------------------------------------------------------

    @property
    def connections(self) -> tuple[int, int]:
        """(accepted so far, still open): a client that closes its own ends them."""
        return self._server.accepted, self._server.open_connections

    def _connection_closed(self) -> None:
        with self._lock:
            self._changed()

    def calls(
        self, method: str | None = None, chat_id: int | str | None = None
    ) -> list[RecordedCall]:
        wanted = None if method is None else (canonical_method(method) or method)
        with self._lock:
            found = [
                call
                for call in self._calls
                if (wanted is None or call.method == wanted)
                and (chat_id is None or call.chat_id == chat_id)
            ]
        return sorted(found, key=lambda call: call.at)

    def messages(self, chat_id: int, *, include_incoming: bool = False) -> list[StoredMessage]:
        with self._lock:
            stored = self._world.messages(chat_id)
        return [m for m in stored if include_incoming or m.from_bot]

    def texts(self, chat_id: int) -> list[str]:
        return [message.text for message in self.messages(chat_id)]

    def drafts(self, chat_id: int) -> dict[int, str]:
        with self._lock:
            return {key: draft.text for key, draft in self._world.drafts(chat_id).items()}

    @property
    def acknowledged_offset(self) -> int:
        with self._lock:
            return self._queue.acknowledged_offset

    @property
    def pending_update_count(self) -> int:
        with self._lock:
            return self._queue.pending_count

    @property
    def polling(self) -> bool:
        """True while a getUpdates request is held open waiting for updates."""
        with self._lock:
            return self._poll.waiting

    @property
    def webhook_url(self) -> str | None:
        with self._lock:
            return self._queue.webhook.url if self._queue.webhook else None

    @property
    def retry_after_violations(self) -> list[RetryAfterViolation]:
        with self._lock:
            return list(self._flood.violations)

    def fault_waiting(self, method: str) -> bool:
        """Is a fault queued for ``method`` still waiting for its request?"""
        with self._lock:
            return self._faults.holds(canonical_method(method) or method)

    async def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        """Wait in an event loop until predicate() is truthy; return its value."""
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiters.add(waiter)
        try:
            with anyio.fail_after(timeout):
                while True:
                    waiter[1].clear()
                    result = predicate()
                    if result:
                        return result
                    await waiter[1].wait()
        finally:
            with self._lock:
                self._waiters.discard(waiter)

    def wait_for_blocking(self, predicate: Callable[[], T], timeout: float = 5.0) -> T:
        """Block this thread until predicate() is truthy; never call it in an event loop."""
        with self._condition:
            result = self._condition.wait_for(predicate, timeout)
        if not result:
            raise TimeoutError(f"condition not met within {timeout} s")
        return result

    def _changed(self) -> None:
        """Wake whoever waits on the fake's state. Call with the lock held."""
        self._condition.notify_all()
        for loop, event in self._waiters:
            with suppress(RuntimeError):  # that loop is closed: nobody left to wake
                loop.call_soon_threadsafe(event.set)
        self._poll.wake()
        self.webhooks.wake()

    # -- faults ------------------------------------------------------------------

    def fail_next(
        self,
        method: str | None,
        error: int = 429,
        *,
        retry_after: int | None = None,
        description: str | None = None,
        times: int = 1,
        applied: bool = False,
        others_say: Mapping[int, str] | None = None,
        answer_after: float = 0.0,
    ) -> None:
        if error == 429 and retry_after is None:
            retry_after = 3
        others = tuple((others_say or {}).items())
        self._add_fault(
            Fault(
                method,
                "fail",
                times,
                error,
                retry_after,
                description,
                applied,
                None,
                others,
                answer_after,
            )
        )

    def timeout_next(
        self,
        method: str | None,
        *,
        times: int = 1,
        close: bool = False,
        user_says: str | None = None,
        others_say: Mapping[int, str] | None = None,
    ) -> None:
        kind: FaultKind = "close" if close else "timeout"
        others = tuple((others_say or {}).items())
        self._add_fault(Fault(method, kind, times, user_says=user_says, others_say=others))

    def drop_next(
        self,
        method: str | None,
        *,
        times: int = 1,
        user_says: str | None = None,
        others_say: Mapping[int, str] | None = None,
    ) -> None:
        others = tuple((others_say or {}).items())
        self._add_fault(Fault(method, "drop", times, user_says=user_says, others_say=others))

    def stall_next(
        self, method: str | None, *, times: int = 1, user_says: str | None = None
    ) -> None:
        self._add_fault(Fault(method, "stall", times, user_says=user_says))

    def spare_next(self, method: str | None, *, times: int = 1) -> None:
        """Serve the next matching requests as usual: a fault queued after this one
        hits the request after them."""
        self._add_fault(Fault(method, "spare", times))

    def refuse_connections(self, seconds: float) -> None:
        """Stop listening for ``seconds`` (connections are refused); returns at once.
        Call it from a test's thread or loop, never from the fake's own."""
        self._server.refuse_connections(seconds)

    def _add_fault(self, fault: Fault) -> None:
        with self._lock:
            self._faults.add(fault)

    # -- serving -----------------------------------------------------------------

    async def _serve(self, request: HttpRequest) -> Outcome:
        at = time.monotonic()
        download = FILE_PATH.fullmatch(unquote(request.path))
        if download is not None:
            with self._lock:
                self.files.asked += 1
                self._changed()
            await asyncio.get_running_loop().run_in_executor(None, self.files.served.wait)
            return self._download(download.group(1), download.group(2), at)
        match = _PATH.fullmatch(request.path)
        name = match.group(2) if match else request.path
        method = canonical_method(name) or name
        try:
            params = coerce_params(request.params())
        except BadHttpRequestError as error:
            return self._record(method, {}, at, bad_request(str(error)).to_json(), 400)
        if match is None or match.group(1) != self.token:
            return self._record(method, params, at, ApiError(401, "Unauthorized").to_json(), 401)
        if canonical_method(name) is None:
            return self._record(method, params, at, ApiError(404, "Not Found").to_json(), 404)
        chat_id = params.get("chat_id")
        chat_key = chat_id if isinstance(chat_id, int | str) else None
        with self._lock:
            left = self._flood.check_penalty(method, chat_key, at)
            fault = self._faults.take(method) if left is None else None
        if fault is not None and fault.kind == "spare":
            fault = None
        if fault is not None and fault.user_says is not None and isinstance(chat_id, int):
            known = self._world.chats.get(chat_id)
            chat_type = known.type if known is not None else "private"
            self.push_text(chat_id, chat_id, fault.user_says, chat_type=chat_type)
        for other, text in fault.others_say if fault is not None else ():
            known = self._world.chats.get(other)
            chat_type = known.type if known is not None else "private"
            self.push_text(other, other if other > 0 else 1, text, chat_type=chat_type)
        status, payload = 200, None
        try:
            if left is not None:
                raise too_many_requests(left)
            if fault is not None and fault.kind in {"drop", "stall"}:
                self._record(method, params, at, None, None, fault.kind)
                return Outcome("hold" if fault.kind == "stall" else "close")
            if fault is not None and fault.kind == "fail":
                injected = fault.api_error(method)
                if injected.retry_after is not None:
                    with self._lock:
                        self._flood.impose(method, chat_key, injected.retry_after, at)
                if fault.applied:
                    with suppress(ApiError):
                        await self._process(method, params, chat_key, at)
                raise injected
            payload = await self._process(method, params, chat_key, at)
        except ApiError as error:
            status, payload = error.code, error.to_json()
        kind = fault.kind if fault is not None else None
        outcome = self._record(method, params, at, payload, status, kind)
        if fault is not None and fault.answer_after:
            await asyncio.sleep(fault.answer_after)
        if kind in {"timeout", "close"}:
            return Outcome("hold" if kind == "timeout" else "close")
        return outcome

    def _download(self, token: str, path: str, at: float) -> Outcome:
        if token != self.token:
            return self._record(
                "file", {"path": path}, at, ApiError(401, "Unauthorized").to_json(), 401
            )
        with self._lock:
            data = self.files.download(path)
        if data is None:
            return self._record(
                "file", {"path": path}, at, ApiError(404, "Not Found").to_json(), 404
            )
        self._record("file", {"path": path}, at, {"ok": True, "bytes": len(data)}, 200)
        return Outcome("answer", 200, None, data)

    def _record(
        self,
        method: str,
        params: Json,
        at: float,
        payload: Json | None,
        status: int | None,
        fault: str | None = None,
    ) -> Outcome:
        with self._lock:
            self._calls.append(RecordedCall(method, params, at, status, payload, fault))
            self._changed()
        if status is None or payload is None:
            return Outcome("close")
        return Outcome("answer", status, payload)

    async def _process(
        self, method: str, params: Json, chat_key: int | str | None, at: float
    ) -> Json:
        if method == "getUpdates":
            return await self._poll.get_updates(params)
        if method == "getFile":
            with self._lock:
                return self.files.get_file(params)
        with self._lock:
            retry_after = self._flood.throttle(method, chat_key, at)
            if retry_after is not None:
                raise too_many_requests(retry_after)
            payload = self._world.handle(method, params)
            self._changed()
            return payload
