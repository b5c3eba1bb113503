"""A fake Slack for tests: the Web API and Socket Mode on 127.0.0.1, in its own thread.

The real ``slack-sdk`` ``AsyncWebClient`` (``base_url`` pointed here) and the real
``slack-bolt`` ``AsyncApp`` with ``AsyncSocketModeHandler`` talk to it over real
sockets. A test plays the people: :meth:`SlackFake.say` posts a message as a user (and
the server sends the events Slack would: ``message`` with its ``channel_type``, and
``app_mention`` when the text mentions the bot), :meth:`SlackFake.press` presses a
button of a message, :meth:`SlackFake.slash` runs a slash command. The Web API side is
:mod:`tests.fakes.slack_web`; Socket Mode is :mod:`tests.fakes.slack_socket`.

Files: a file a person shares is served at its ``url_private_download`` only with the
bot token in ``Authorization`` (without it Slack answers 200 with its HTML sign-in page,
as the real one does); uploads go to the URL ``files.getUploadURLExternal`` handed out.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import anyio
from aiohttp import web

from tests.fakes.loop_thread import LoopThread
from tests.fakes.slack_limits import RateLimits
from tests.fakes.slack_socket import Envelope, SocketMode
from tests.fakes.slack_state import Conversation, Message, StoredFile, Workspace
from tests.fakes.slack_web import JSON_METHODS, WebApi

T = TypeVar("T")

SIGN_IN_PAGE = "<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in</body></html>"


class SlackFake(LoopThread):
    name = "Slack fake"

    def __init__(
        self,
        bot_token: str,
        app_token: str,
        *,
        scale: float = 60.0,
        burst: float = 3.0,
        ack_timeout: float = 3.0,
    ) -> None:
        super().__init__()
        self.workspace = Workspace()
        self.limits = RateLimits(scale, burst)
        self.bot_token = bot_token
        self.app_token = app_token
        self.web = WebApi(
            self.workspace,
            self.limits,
            bot_token=bot_token,
            app_token=app_token,
            base_url=lambda: self.root,
        )
        self.socket = SocketMode(self.workspace.app_id, self._changed)
        self.socket.ack_timeout = ack_timeout
        self.socket.url_of = lambda ticket: (
            f"ws://127.0.0.1:{self.port}/link/?ticket={ticket}&app_id={self.workspace.app_id}"
        )
        self.web.open_connection = self.socket.open_url
        self.subscriptions = {"message.im", "message.channels", "app_mention"}
        self.downloads_refused = 0
        self.serve_files = True
        self.files_served = threading.Event()
        """Cleared: a file's download waits until it is set again (a slow file host)."""
        self.files_served.set()
        self.downloads_begun = 0
        self.lost: dict[str, int] = {}
        """Methods whose next calls take effect but whose answer never arrives."""
        self.dropped: dict[str, int] = {}
        """Methods whose next calls are cut off before they take effect."""
        self.port = 0
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._runner: web.AppRunner | None = None

    # -- lifecycle -------------------------------------------------------------------

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What ``AsyncWebClient(base_url=...)`` takes (with the trailing slash)."""
        return f"{self.root}/api/"

    async def _opened(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/files-pri/{file_id}/{name}", self._download)
        app.router.add_get("/link/", self.socket.handle)
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1)
        self._runner = runner
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(runner.addresses[0][1])

    async def _closing(self) -> None:
        await self._shutdown()

    async def _shutdown(self) -> None:
        self.files_served.set()  # no download left waiting in a thread
        await self.socket.close_all()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- HTTP ------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: dict[str, Any] = dict(request.query)
        raw = await request.read()
        if raw:
            if request.content_type == "application/json":
                body = json.loads(raw)
                if isinstance(body, dict) and method in JSON_METHODS:
                    args.update(body)
            else:
                args.update(parse_qsl(raw.decode(), keep_blank_values=True))
        token = None
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            token = auth.removeprefix("Bearer ").strip()
        elif isinstance(args.get("token"), str):
            token = args["token"]
        with self._lock:
            if self._take_fault(self.dropped, method):
                self._cut(request)  # the call never took effect
                return web.Response(status=500)
            reply = self.web.handle(method, args, token)
            if reply.body.get("ok") and method == "chat.postMessage":
                self._echo(reply.body)
            lost = reply.body.get("ok") and self._take_fault(self.lost, method)
            self._changed()
        if lost:
            self._cut(request)  # it took effect; the answer is lost on the way
            return web.Response(status=500)
        return web.json_response(reply.body, status=reply.status, headers=reply.headers)

    @staticmethod
    def _take_fault(faults: dict[str, int], method: str) -> bool:
        if faults.get(method, 0) <= 0:
            return False
        faults[method] -= 1
        return True

    @staticmethod
    def _cut(request: web.Request) -> None:
        if request.transport is not None:
            request.transport.abort()

    def _echo(self, body: dict[str, Any]) -> None:
        """Slack sends the bot's own posts back as ``message`` events too."""
        conversation = self.workspace.conversations[body["channel"]]
        message = conversation.find(body["ts"])
        if message is not None:
            self._events_for(conversation, message)

    async def _upload(self, request: web.Request) -> web.Response:
        data = await request.read()
        with self._lock:
            file = self.workspace.files.get(request.match_info["file_id"])
            if file is None or file.completed:
                return web.Response(status=404, text="Not Found")
            file.data = data
            self._changed()
        return web.Response(text=f"OK - {len(data)}")

    async def _download(self, request: web.Request) -> web.Response:
        with self._lock:
            self.downloads_begun += 1
            self._changed()
        await asyncio.get_running_loop().run_in_executor(None, self.files_served.wait)
        auth = request.headers.get("Authorization", "")
        with self._lock:
            file = self.workspace.files.get(request.match_info["file_id"])
            refused = not self.serve_files or auth != f"Bearer {self.bot_token}"
            if refused or file is None or file.data is None:
                self.downloads_refused += 1
                return web.Response(text=SIGN_IN_PAGE, content_type="text/html")
        return web.Response(body=file.data, content_type=file.mimetype)

    # -- playing the people ----------------------------------------------------------

    def dm(self, user: str) -> str:
        """The id of the direct-message conversation between ``user`` and the bot."""
        with self._lock:
            return self.workspace.dm_with(user).id

    def join(self, channel: str, *users: str, bot: bool = True) -> None:
        with self._lock:
            conversation = self.workspace.channel(channel, bot_member=bot)
            conversation.members.update(users)

    def say(
        self,
        user: str,
        text: str,
        *,
        channel: str | None = None,
        thread_ts: str | None = None,
        files: list[tuple[str, str, bytes]] | None = None,
        external_url: str | None = None,
        heard: bool = True,
    ) -> str:
        """Post ``text`` as ``user`` (in their DM with the bot unless ``channel``);
        return the message's ts. ``files``: (name, mimetype, data) shared with it;
        kept at ``external_url`` (another host) when given. Not ``heard``: said while no
        socket was connected for longer than Slack retries an event, so no event ever
        comes (it is only in the history)."""
        with self._lock:
            if channel is None:
                conversation = self.workspace.dm_with(user)
            else:
                conversation = self.workspace.channel(channel)
                conversation.members.add(user)
            ids = [self._store_file(user, *f, external_url=external_url) for f in files or []]
            message = self.workspace.post(conversation, user, text, thread_ts=thread_ts, files=ids)
        if heard:
            self.run(self._events_async(conversation, message))
        return message.ts

    def _store_file(
        self, user: str, name: str, mimetype: str, data: bytes, *, external_url: str | None
    ) -> str:
        file_id = self.workspace.new_id("F")
        self.workspace.files[file_id] = StoredFile(
            file_id, name, len(data), data, mimetype, user, completed=True
        )
        self.workspace.files[file_id].external_url = external_url
        return file_id

    async def _events_async(self, conversation: Conversation, message: Message) -> None:
        with self._lock:
            self._events_for(conversation, message)

    def _events_for(self, conversation: Conversation, message: Message) -> None:
        event = self._message_event(conversation, message)
        kind = conversation.kind
        subscription = {"im": "message.im", "channel": "message.channels"}.get(kind, "")
        if kind == "group":
            subscription = "message.groups"
        if subscription in self.subscriptions:
            self._push_event(event)
        mention = f"<@{self.workspace.bot_user}>"
        if kind != "im" and mention in message.text and "app_mention" in self.subscriptions:
            mention_event = {k: v for k, v in event.items() if k != "channel_type"}
            mention_event["type"] = "app_mention"
            self._push_event(mention_event)

    def _message_event(self, conversation: Conversation, message: Message) -> dict[str, Any]:
        event: dict[str, Any] = {
            "type": "message",
            "channel": conversation.id,
            "user": message.user,
            "text": message.text,
            "ts": message.ts,
            "event_ts": message.ts,
            "channel_type": conversation.kind,
            "team": self.workspace.team_id,
        }
        if message.bot:
            event["bot_id"] = "B0FAKEBOT"
        else:
            event["client_msg_id"] = str(uuid.uuid4())
        if message.thread_ts is not None:
            event["thread_ts"] = message.thread_ts
        if message.files:
            event["subtype"] = "file_share"
            event["files"] = [self._file_object(self.workspace.files[f]) for f in message.files]
        return event

    def _file_object(self, file: StoredFile) -> dict[str, Any]:
        url = file.external_url or f"{self.root}/files-pri/{file.id}/{file.name}"
        return {
            "is_external": file.external_url is not None,
            "id": file.id,
            "name": file.name,
            "title": file.name,
            "mimetype": file.mimetype,
            "size": file.length,
            "url_private": url,
            "url_private_download": url,
        }

    def _push_event(self, event: dict[str, Any]) -> Envelope:
        payload = {
            "token": "verification-token-unused",
            "team_id": self.workspace.team_id,
            "api_app_id": self.workspace.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": "Ev" + uuid.uuid4().hex[:10].upper(),
            "event_time": int(float(event["event_ts"])),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": self.workspace.team_id,
                    "user_id": self.workspace.bot_user,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
        }
        return self.socket.push("events_api", payload)

    def press(self, user: str, channel: str, ts: str, action_id: str) -> Envelope:
        """Press the button ``action_id`` of the message ``ts`` as ``user``; only a
        button the message shows can be pressed."""

        async def go() -> Envelope:
            with self._lock:
                conversation = self.workspace.conversations[channel]
                message = conversation.find(ts)
                assert message is not None, f"no message {ts} in {channel}"
                button = _button(message, action_id)
                assert button is not None, f"message {ts} has no button {action_id!r}"
                payload = {
                    "type": "block_actions",
                    "user": {"id": user, "team_id": self.workspace.team_id},
                    "api_app_id": self.workspace.app_id,
                    "team": {"id": self.workspace.team_id, "domain": "fake"},
                    "container": {
                        "type": "message",
                        "message_ts": ts,
                        "channel_id": channel,
                        "is_ephemeral": False,
                    },
                    "trigger_id": uuid.uuid4().hex,
                    "channel": {"id": channel},
                    "message": message.to_api(with_metadata=False),
                    "response_url": f"{self.root}/response/{uuid.uuid4().hex}",
                    "actions": [
                        {
                            "type": "button",
                            "action_id": action_id,
                            "block_id": button["block_id"],
                            "value": button.get("value", ""),
                            "text": button.get("text", {}),
                            "action_ts": self.workspace.next_ts(),
                        }
                    ],
                }
                return self.socket.push("interactive", payload)

        return self.run(go())

    def slash(self, user: str, channel: str, command: str, text: str) -> Envelope:
        async def go() -> Envelope:
            with self._lock:
                payload = {
                    "token": "verification-token-unused",
                    "team_id": self.workspace.team_id,
                    "team_domain": "fake",
                    "channel_id": channel,
                    "channel_name": "directmessage" if channel.startswith("D") else channel,
                    "user_id": user,
                    "command": command,
                    "text": text,
                    "api_app_id": self.workspace.app_id,
                    "is_enterprise_install": "false",
                    "response_url": f"{self.root}/response/{uuid.uuid4().hex}",
                    "trigger_id": uuid.uuid4().hex,
                }
                return self.socket.push("slash_commands", payload, accepts=True)

        return self.run(go())

    # -- faults ----------------------------------------------------------------------

    def drop_connections(self) -> None:
        self.run(self.socket.drop())

    def send_disconnect(self, reason: str = "refresh_requested") -> None:
        self.run(self.socket.disconnect(reason))

    def fail_next(self, method: str, error: str, times: int = 1) -> None:
        with self._lock:
            self.web.faults.setdefault(method, []).extend([error] * times)

    def rate_limit_next(self, method: str, seconds: int = 1, channel: str = "") -> None:
        with self._lock:
            self.limits.block(method, channel, seconds)

    def lose_answer(self, method: str, times: int = 1) -> None:
        with self._lock:
            self.lost[method] = self.lost.get(method, 0) + times

    def drop_request(self, method: str, times: int = 1) -> None:
        with self._lock:
            self.dropped[method] = self.dropped.get(method, 0) + times

    def lose_acks(self, count: int = 1) -> None:
        self.socket.lose_acks += count

    # -- reading ---------------------------------------------------------------------

    def messages(self, channel: str, *, thread_ts: str | None = None) -> list[Message]:
        """The bot's messages in ``channel`` (in the thread ``thread_ts`` when given),
        oldest first."""
        with self._lock:
            conversation = self.workspace.conversations.get(channel)
            if conversation is None:
                return []
            return [
                m
                for m in conversation.messages
                if m.bot and (thread_ts is None or m.thread_ts == thread_ts)
            ]

    def texts(self, channel: str, *, thread_ts: str | None = None) -> list[str]:
        return [m.shown for m in self.messages(channel, thread_ts=thread_ts)]

    def calls_of(self, method: str) -> list[dict[str, Any]]:
        with self._lock:
            return [c.args for c in self.web.calls if c.method == method and c.error is None]

    def errors(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(c.method, c.error) for c in self.web.calls if c.error is not None]

    def acked(self, envelope: Envelope) -> bool:
        return envelope.acked

    async def wait_for(self, predicate: Callable[[], T | None], timeout: float = 10.0) -> T:
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

    def _changed(self) -> None:
        for loop, event in list(self._waiters):
            with suppress(RuntimeError):
                loop.call_soon_threadsafe(event.set)


def _button(message: Message, action_id: str) -> dict[str, Any] | None:
    for block in message.blocks:
        if block.get("type") != "actions":
            continue
        for element in block.get("elements", []):
            if element.get("type") == "button" and element.get("action_id") == action_id:
                return {**element, "block_id": block.get("block_id", "")}
    return None
