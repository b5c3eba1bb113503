"""A fake of Discord, strict as the service, for the real discord.py over loopback.

The server runs on 127.0.0.1 in a thread with its own event loop; every method is
thread-safe. It serves the REST API under ``base_url`` (``…/api/v10``, see
:mod:`tests.fakes.discord_rest`) and the gateway WebSocket at ``gateway_url`` (see
:mod:`tests.fakes.discord_gateway`); message routes are rate limited per channel as
Discord's are (:mod:`tests.fakes.discord_limits`), and ``limits.violations`` lists any
request sent before a reset the client had been told of.

The world (test side)
    add_user(name) -> id; add_guild(name) -> id; add_channel(guild_id, name) -> id
    say_dm(user_id, text, *, attachments) -> message id     (opens the DM channel)
    say_in(channel_id, user_id, text, *, mention, reply_to, attachments) -> message id
    press(message_id, user_id, custom_id) -> interaction id   (a button press)
    invoke(channel_id, user_id, name, options) -> interaction id  (a slash command)
    drop() / invalidate(resumable=) / reconnect()             (gateway faults)
    texts(channel_id), messages(channel_id), wait_for(predicate)

Without the privileged MESSAGE_CONTENT intent a bot receives guild messages with empty
``content``, ``attachments``, ``embeds`` and ``components`` unless it is mentioned or the
message replies to it; DMs keep theirs. An identify asking for MESSAGE_CONTENT when the
application was not granted it (``privileged_intents``) is closed with 4014.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, Self, TypeVar

from aiohttp import web

from tests.fakes.discord_gateway import DIRECT_MESSAGES, GUILD_MESSAGES, MESSAGE_CONTENT, Gateway
from tests.fakes.discord_limits import Limits, message_routes
from tests.fakes.discord_rest import Rest
from tests.fakes.discord_state import DM, Interaction, World
from tests.fakes.discord_wire import iso_now

T = TypeVar("T")


def fake_token() -> str:
    """A token shaped like a bot token (built at run time; never a real one)."""
    return f"ODk{secrets.token_urlsafe(20)}.{secrets.token_urlsafe(4)}.{secrets.token_urlsafe(27)}"


class DiscordFake:
    def __init__(
        self,
        token: str | None = None,
        *,
        privileged_intents: Iterable[str] = ("message_content",),
        edits_per_window: int = 5,
        window: float = 5.0,
        heartbeat_interval_ms: int = 41250,
        interaction_deadline: float = 3.0,
    ) -> None:
        self.token = token or fake_token()
        self.privileged_intents = set(privileged_intents)
        self.lock = threading.RLock()
        self._condition = threading.Condition(self.lock)
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self.loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0
        app_id = 1_000_000_000_000_000_001
        bot = {
            "id": str(app_id),
            "username": "thalos",
            "global_name": None,
            "discriminator": "0",
            "avatar": None,
            "bot": True,
            "flags": 0,
            "verified": True,
            "mfa_enabled": False,
        }
        self.world = World(bot, app_id)
        self.world.interaction_deadline = interaction_deadline
        self.limits = Limits(message_routes(edits_per_window, window))
        self.gateway = Gateway(self, heartbeat_interval_ms)
        self.rest = Rest(self)
        self.typing: list[int] = []
        self.callbacks: list[tuple[int, int, dict[str, Any]]] = []
        self.nonce_hits: list[str] = []
        """Nonces of creates that returned an earlier message (``enforce_nonce``)."""
        self.files_served = threading.Event()
        """Cleared: an attachment's download waits until it is set again (a slow CDN)."""
        self.files_served.set()
        self.downloads_begun = 0

    # -- lifecycle --------------------------------------------------------------------

    @property
    def bot_id(self) -> int:
        return int(self.world.bot["id"])

    @property
    def application_flags(self) -> int:
        """GATEWAY_MESSAGE_CONTENT_LIMITED (1 << 19) once the portal's toggle is on."""
        return (1 << 19) if "message_content" in self.privileged_intents else 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.base}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    def __enter__(self) -> Self:
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._serve, args=(started,), daemon=True, name="discord-fake"
        )
        self._thread.start()
        started.wait(10)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.files_served.set()  # no download left waiting in a thread

        async def stop() -> None:
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _serve(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.add_routes([web.get("/gateway", self.gateway.handle), *self.rest.routes()])
        self._runner = web.AppRunner(app, handle_signals=False)
        self.loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self.loop.run_until_complete(site.start())
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        started.set()
        self.loop.run_forever()
        self.loop.close()

    # -- waiting ------------------------------------------------------------------------

    def notify(self) -> None:
        with self._condition:
            self._condition.notify_all()
            for loop, event in self._waiters:
                loop.call_soon_threadsafe(event.set)

    async def wait_for(self, predicate: Callable[[], T | None], timeout: float = 10.0) -> T:
        """Wait in an event loop until ``predicate()`` is truthy; return its value."""
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self.lock:
            self._waiters.append(waiter)
        try:
            deadline = time.monotonic() + timeout
            while True:
                with self.lock:
                    waiter[1].clear()
                    value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"condition not met within {timeout}s")
                try:
                    await asyncio.wait_for(waiter[1].wait(), left)
                except TimeoutError:
                    continue
        finally:
            with self.lock:
                self._waiters.remove(waiter)

    # -- the world ----------------------------------------------------------------------

    def add_user(self, name: str) -> int:
        with self.lock:
            return self.world.add_user(name)

    def add_guild(self, name: str) -> int:
        with self.lock:
            return self.world.add_guild(name)

    def add_channel(self, guild_id: int, name: str) -> int:
        with self.lock:
            return self.world.add_channel(guild_id, name)

    def dm_channel_id(self, user_id: int) -> int:
        with self.lock:
            return int(self.world.dm_channel(user_id)["id"])

    def say_dm(
        self,
        user_id: int,
        text: str,
        *,
        attachments: list[tuple[str, bytes]] = (),  # type: ignore[assignment]
        voice: tuple[bytes, float] | None = None,
    ) -> int:
        with self.lock:
            channel = int(self.world.dm_channel(user_id)["id"])
        return self.say_in(channel, user_id, text, attachments=attachments, voice=voice)

    def say_in(
        self,
        channel_id: int,
        user_id: int,
        text: str,
        *,
        mention: bool = False,
        reply_to: int | None = None,
        attachments: list[tuple[str, bytes]] = (),  # type: ignore[assignment]
        voice: tuple[bytes, float] | None = None,
    ) -> int:
        """``voice``: (OGG/Opus bytes, seconds) sent as a voice message, which Discord
        marks with the IS_VOICE_MESSAGE flag (1 << 13) and one ``voice-message.ogg``
        attachment that carries its duration and waveform, and no text."""
        with self.lock:
            world = self.world
            author = world.users[user_id]
            if mention and "{bot}" in text:  # the mention where the text puts it
                content = text.replace("{bot}", f"<@{self.bot_id}>")
            else:
                content = f"<@{self.bot_id}> {text}" if mention else text
            body: dict[str, Any] = {"content": content}
            if reply_to is not None:
                body["message_reference"] = {"message_id": str(reply_to)}
            files = []
            for filename, data in attachments:
                aid = world.ids.next()
                url = f"{self.base}/attachments/{channel_id}/{aid}/{filename}"
                world.files[url] = data
                files.append(
                    {
                        "id": str(aid),
                        "filename": filename,
                        "size": len(data),
                        "url": url,
                        "proxy_url": url,
                        "content_type": _kind(filename),
                    }
                )
            if voice is not None:
                data, seconds = voice
                aid = world.ids.next()
                url = f"{self.base}/attachments/{channel_id}/{aid}/voice-message.ogg"
                world.files[url] = data
                files = [
                    {
                        "id": str(aid),
                        "filename": "voice-message.ogg",
                        "size": len(data),
                        "url": url,
                        "proxy_url": url,
                        "content_type": "audio/ogg",
                        "duration_secs": seconds,
                        "waveform": base64.b64encode(bytes(range(0, 256, 4))).decode(),
                    }
                ]
                body = {"content": "", "flags": 1 << 13}
            message, _ = world.post(channel_id, author, body, files)
            if mention:
                message["mentions"] = [world.bot]
            self.message_created(message)
            return int(message["id"])

    def message_created(self, message: dict[str, Any]) -> None:
        """MESSAGE_CREATE to every session that asked for it, content as its intents allow."""
        dm = self.world.channels[int(message["channel_id"])]["type"] == DM
        intent = DIRECT_MESSAGES if dm else GUILD_MESSAGES
        for session in self.gateway.sessions.values():
            if not session.valid or not session.intents & intent:
                continue
            data = dict(message)
            if not dm and not session.intents & MESSAGE_CONTENT and not self._addressed(message):
                data.update(content="", attachments=[], embeds=[], components=[])
            self.gateway._dispatch_to(session, "MESSAGE_CREATE", data)

    def _addressed(self, message: dict[str, Any]) -> bool:
        me = self.world.bot["id"]
        if message["author"]["id"] == me or any(u["id"] == me for u in message.get("mentions", [])):
            return True
        referenced = message.get("referenced_message")
        return isinstance(referenced, dict) and referenced["author"]["id"] == me

    def press(self, message_id: int, user_id: int, custom_id: str) -> int:
        """A user presses a button on one of the bot's messages."""
        with self.lock:
            world = self.world
            message = next(
                m for ms in world.messages.values() for m in ms if m["id"] == str(message_id)
            )
            channel_id = int(message["channel_id"])
            return self._interaction(
                3, channel_id, user_id, {"custom_id": custom_id, "component_type": 2}, message
            )

    def invoke(
        self, channel_id: int, user_id: int, name: str, options: dict[str, str] | None = None
    ) -> int:
        """A user runs one of the registered application commands."""
        with self.lock:
            command = next((c for c in self.world.commands if c["name"] == name), None)
            assert command is not None, f"/{name} is not registered"
            data = {
                "id": command["id"],
                "name": name,
                "type": 1,
                "options": [{"name": k, "type": 3, "value": v} for k, v in (options or {}).items()],
            }
            return self._interaction(2, channel_id, user_id, data, None)

    def _interaction(
        self,
        kind: int,
        channel_id: int,
        user_id: int,
        data: dict[str, Any],
        message: dict[str, Any] | None,
    ) -> int:
        world = self.world
        channel = world.channels[channel_id]
        iid = world.ids.next()
        token = secrets.token_urlsafe(48)
        world.interactions[iid] = Interaction(
            iid,
            token,
            kind,
            user_id,
            channel_id,
            None if message is None else int(message["id"]),
            time.monotonic(),
        )
        user = world.users[user_id]
        payload: dict[str, Any] = {
            "id": str(iid),
            "application_id": str(world.application_id),
            "type": kind,
            "data": data,
            "channel_id": str(channel_id),
            "channel": {k: v for k, v in channel.items() if k != "recipients"}
            | {"type": channel["type"]},
            "token": token,
            "version": 1,
            "locale": "en-US",
            "app_permissions": "2248473465835073",
            "entitlements": [],
            "authorizing_integration_owners": {"0": str(channel.get("guild_id", "0"))},
            "context": 1 if channel["type"] == DM else 0,
            "attachment_size_limit": 10485760,
        }
        if "guild_id" in channel:
            payload["guild_id"] = channel["guild_id"]
            payload["member"] = {
                "user": user,
                "roles": [],
                "joined_at": iso_now(),
                "deaf": False,
                "mute": False,
                "flags": 0,
                "permissions": "2248473465835073",
            }
        else:
            payload["user"] = user
        if message is not None:
            payload["message"] = message
        self.gateway.dispatch("INTERACTION_CREATE", payload)
        return iid

    def drop(self) -> int:
        with self.lock:
            return self.gateway.drop()

    def invalidate(self, *, resumable: bool = False) -> None:
        with self.lock:
            self.gateway.invalidate(resumable=resumable)

    def reconnect(self) -> None:
        with self.lock:
            self.gateway.reconnect()

    def texts(self, channel_id: int) -> list[str]:
        with self.lock:
            return self.world.texts(channel_id)

    def messages(self, channel_id: int) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(m) for m in self.world.messages.get(channel_id, [])]

    def connected(self) -> bool:
        with self.lock:
            return any(s.conn is not None for s in self.gateway.sessions.values())


def _kind(filename: str) -> str:
    return "image/png" if filename.endswith(".png") else "text/plain; charset=utf-8"
