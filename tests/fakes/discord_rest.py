"""The Discord fake's REST routes (``/api/v10``), the ones a bot on discord.py uses here.

Every bot request needs ``Authorization: Bot <token>`` (else 401) and a ``User-Agent`` of
the form ``DiscordBot (url, version)`` (else 400); interaction callbacks are
authenticated by the interaction's token in the path instead. Counted routes
pass through :mod:`tests.fakes.discord_limits` first. Bodies are JSON or, with files,
``multipart/form-data`` holding ``payload_json`` and ``files[n]`` parts, each of which
must be named by an ``attachments`` entry of the payload (id ``n``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes.discord_wire import (
    MISSING_ACCESS,
    NOT_FOUND,
    TOO_LARGE,
    UNAUTHORIZED,
    UNKNOWN_APPLICATION,
    UNKNOWN_USER,
    ApiError,
    form_error,
)

if TYPE_CHECKING:
    from tests.fakes.discord_api import DiscordFake

MAX_UPLOAD = 10 * 1024 * 1024
"""A bot's upload limit per message in a server without boosts (10 MiB)."""
THREAD = 11
VIA = "1.1 google"


class Rest:
    def __init__(self, fake: DiscordFake) -> None:
        self.fake = fake
        self.calls: list[tuple[str, str]] = []
        """(route, major id) of every authorised request, in arrival order."""
        self.timed: list[tuple[str, str, float]] = []
        """The same, with the arrival time (for bench/discord_stream.py)."""
        self.drop_after: dict[str, int] = {}
        """Fault: route -> how many more requests to apply and then drop unanswered."""
        self.refuse_next: dict[str, int] = {}
        """Fault: route -> how many more requests a gateway answers 502 without passing
        them on (never carried out)."""

    def routes(self) -> list[web.RouteDef]:
        api = "/api/v10"
        return [
            web.get(f"{api}/users/@me", self._wrap(self.me)),
            web.get(f"{api}/users/{{user_id}}", self._wrap(self.user)),
            web.get(f"{api}/gateway", self._wrap(self.gateway, auth=False)),
            web.get(f"{api}/gateway/bot", self._wrap(self.gateway)),
            web.get(f"{api}/oauth2/applications/@me", self._wrap(self.application)),
            web.post(f"{api}/users/@me/channels", self._wrap(self.open_dm)),
            web.post(f"{api}/channels/{{channel_id}}/messages", self._wrap(self.create)),
            web.patch(
                f"{api}/channels/{{channel_id}}/messages/{{message_id}}", self._wrap(self.edit)
            ),
            web.get(
                f"{api}/channels/{{channel_id}}/messages/{{message_id}}",
                self._wrap(self.get_message),
            ),
            web.get(f"{api}/channels/{{channel_id}}", self._wrap(self.get_channel)),
            web.get(f"{api}/channels/{{channel_id}}/messages", self._wrap(self.history)),
            web.post(f"{api}/channels/{{channel_id}}/typing", self._wrap(self.typing)),
            web.post(
                f"{api}/channels/{{channel_id}}/messages/{{message_id}}/threads",
                self._wrap(self.thread),
            ),
            web.post(
                f"{api}/interactions/{{interaction_id}}/{{token}}/callback",
                self._wrap(self.callback, auth=False),
            ),
            web.put(
                f"{api}/applications/{{application_id}}/commands", self._wrap(self.put_commands)
            ),
            web.get(
                f"{api}/applications/{{application_id}}/commands", self._wrap(self.get_commands)
            ),
            web.get("/attachments/{channel_id}/{attachment_id}/{filename}", self.download),
        ]

    # -- plumbing ---------------------------------------------------------------------

    def _wrap(self, handler: Any, *, auth: bool = True) -> Any:
        async def run(request: web.Request) -> web.StreamResponse:
            route = (
                f"{request.method} {request.match_info.route.resource.canonical[len('/api/v10') :]}"  # type: ignore[union-attr]
            )
            major = request.match_info.get("channel_id", "")
            agent = request.headers.get("User-Agent", "")
            if auth and not agent.startswith("DiscordBot"):
                return _error(ApiError(400, 0, "400: Bad Request"))
            if auth and request.headers.get("Authorization") != f"Bot {self.fake.token}":
                return _error(UNAUTHORIZED)
            body = await _body(request)
            with self.fake.lock:
                self.calls.append((route, major))
                self.timed.append((route, major, time.monotonic()))
                verdict = self.fake.limits.check(route, major, counted=auth)
                if verdict.retry_after is not None:
                    self.fake.notify()
                    return _json(
                        {
                            "message": "You are being rate limited.",
                            "retry_after": round(verdict.retry_after, 3),
                            "global": verdict.is_global,
                        },
                        status=429,
                        headers={**verdict.headers, "X-RateLimit-Scope": verdict.scope},
                    )
                if self.refuse_next.get(route, 0) > 0:
                    self.refuse_next[route] -= 1
                    self.fake.notify()
                    return web.Response(status=502, text="502 Bad Gateway", headers={"Via": VIA})
                try:
                    result = handler(request, body)
                except ApiError as exc:
                    self.fake.notify()
                    return _error(exc, verdict.headers)
                drop = self.drop_after.get(route)
                if drop is not None:
                    self.drop_after.pop(route)
                self.fake.notify()
            if drop is not None:
                transport = request.transport
                if transport is not None:
                    transport.abort()
                raise ConnectionResetError
            if result is None:
                return web.Response(status=204, headers={**verdict.headers, "Via": VIA})
            return _json(result, headers=verdict.headers)

        return run

    # -- routes (under the fake's lock) -------------------------------------------------

    def me(self, request: web.Request, body: Any) -> Any:
        return self.fake.world.bot

    def user(self, request: web.Request, body: Any) -> Any:
        found = self.fake.world.users.get(_snowflake(request, "user_id"))
        if found is None:
            raise UNKNOWN_USER
        return found

    def gateway(self, request: web.Request, body: Any) -> Any:
        url = {"url": self.fake.gateway_url}
        if request.path.endswith("/bot"):
            return {
                **url,
                "shards": 1,
                "session_start_limit": {
                    "total": 1000,
                    "remaining": 999,
                    "reset_after": 14400000,
                    "max_concurrency": 1,
                },
            }
        return url

    def application(self, request: web.Request, body: Any) -> Any:
        world = self.fake.world
        return {
            "id": str(world.application_id),
            "name": world.bot["username"],
            "icon": None,
            "description": "",
            "bot_public": True,
            "bot_require_code_grant": False,
            "verify_key": "0" * 64,
            "flags": self.fake.application_flags,
            "owner": world.bot,
        }

    def open_dm(self, request: web.Request, body: Any) -> Any:
        recipient = body.get("recipient_id") if isinstance(body, dict) else None
        if recipient is None:
            raise form_error("recipient_id", "BASE_TYPE_REQUIRED", "This field is required")
        return self.fake.world.dm_channel(int(recipient))

    def create(self, request: web.Request, body: Any) -> Any:
        channel_id = _snowflake(request, "channel_id")
        payload, files = body if isinstance(body, tuple) else (body, {})
        attachments = self._attachments(channel_id, payload, files)
        if int(payload.get("flags") or 0) & VOICE_MESSAGE:
            _check_voice(payload, attachments)
        message, new = self.fake.world.post(channel_id, self.fake.world.bot, payload, attachments)
        if new:
            self.fake.message_created(message)
        else:
            self.fake.nonce_hits.append(str(payload.get("nonce")))
        return message

    def _attachments(
        self, channel_id: int, payload: dict[str, Any], files: dict[int, tuple[str, bytes]]
    ) -> list[dict[str, Any]]:
        if not files:
            return []
        if sum(len(data) for _, data in files.values()) > MAX_UPLOAD:
            raise TOO_LARGE
        named = {
            int(a["id"]): a
            for a in payload.get("attachments", [])
            if isinstance(a, dict) and "id" in a
        }
        result = []
        for index, (filename, data) in sorted(files.items()):
            if index not in named:
                raise form_error(
                    f"attachments.{index}", "ATTACHMENT_NOT_FOUND", "Attachment data not found"
                )
            aid = self.fake.world.ids.next()
            url = f"{self.fake.base}/attachments/{channel_id}/{aid}/{filename}"
            self.fake.world.files[url] = data
            kept = {
                "id": str(aid),
                "filename": filename,
                "size": len(data),
                "url": url,
                "proxy_url": url,
                "content_type": _content_type(filename),
            }
            for extra in ("duration_secs", "waveform"):
                if extra in named[index]:
                    kept[extra] = named[index][extra]
            result.append(kept)
        return result

    def edit(self, request: web.Request, body: Any) -> Any:
        message = self.fake.world.edit(
            _snowflake(request, "channel_id"), _snowflake(request, "message_id"), body
        )
        self.fake.gateway.dispatch("MESSAGE_UPDATE", message, 1 << 9 | 1 << 12)
        return message

    def get_message(self, request: web.Request, body: Any) -> Any:
        return self.fake.world.message_of(
            _snowflake(request, "channel_id"), _snowflake(request, "message_id")
        )

    def history(self, request: web.Request, body: Any) -> Any:
        """Messages after ``after`` (or before ``before``), at most ``limit`` (1-100,
        default 50), newest first, as Discord lists them."""
        channel_id = _snowflake(request, "channel_id")
        self.fake.world.channel(channel_id)
        try:
            limit = int(request.query.get("limit", "50"))
        except ValueError:
            raise form_error("limit", "NUMBER_TYPE_COERCE", "Value is not int.") from None
        if not 1 <= limit <= 100:
            raise form_error(
                "limit", "NUMBER_TYPE_MAX", "int value should be less than or equal to 100."
            )
        messages = self.fake.world.messages.get(channel_id, [])
        after = request.query.get("after")
        before = request.query.get("before")
        if after is not None:
            picked = [m for m in messages if int(m["id"]) > int(after)][:limit]
        elif before is not None:
            picked = [m for m in messages if int(m["id"]) < int(before)][-limit:]
        else:
            picked = messages[-limit:]
        return list(reversed(picked))

    def get_channel(self, request: web.Request, body: Any) -> Any:
        return self.fake.world.channel(_snowflake(request, "channel_id"))

    def typing(self, request: web.Request, body: Any) -> Any:
        self.fake.world.channel(_snowflake(request, "channel_id"))
        self.fake.typing.append(_snowflake(request, "channel_id"))

    def thread(self, request: web.Request, body: Any) -> Any:
        world = self.fake.world
        parent = world.channel(_snowflake(request, "channel_id"))
        message = world.message_of(int(parent["id"]), _snowflake(request, "message_id"))
        name = body.get("name") if isinstance(body, dict) else None
        if not isinstance(name, str) or not 1 <= len(name) <= 100:
            raise form_error("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
        if "guild_id" not in parent:
            raise ApiError(400, 50024, "Cannot execute action on this channel type")
        if int(message["id"]) in world.channels:
            raise ApiError(400, 160004, "A thread has already been created for this message")
        thread = {
            "id": message["id"],
            "type": THREAD,
            "guild_id": parent["guild_id"],
            "parent_id": parent["id"],
            "name": name,
            "owner_id": world.bot["id"],
            "last_message_id": None,
            "message_count": 0,
            "member_count": 1,
            "rate_limit_per_user": 0,
            "flags": 0,
            "total_message_sent": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": body.get("auto_archive_duration", 1440),
                "archive_timestamp": message["timestamp"],
                "locked": False,
            },
        }
        world.channels[int(thread["id"])] = thread
        self.fake.gateway.dispatch("THREAD_CREATE", {**thread, "newly_created": True}, 1)
        return thread

    def callback(self, request: web.Request, body: Any) -> Any:
        world = self.fake.world
        payload, files = body if isinstance(body, tuple) else (body, {})
        kind = payload.get("type") if isinstance(payload, dict) else None
        if kind not in {1, 4, 5, 6, 7, 8, 9}:
            raise form_error(
                "type", "BASE_TYPE_CHOICES", "Value must be one of {1, 4, 5, 6, 7, 8, 9, 10, 12}."
            )
        found = world.answer(
            _snowflake(request, "interaction_id"), request.match_info["token"], kind
        )
        data = payload.get("data") or {}
        message = None
        if kind == 4:
            message, _ = world.post(
                found.channel_id, world.bot, data, self._attachments(found.channel_id, data, files)
            )
            self.fake.message_created(message)
        elif kind == 7 and found.message_id is not None:
            message = world.edit(found.channel_id, found.message_id, data)
            self.fake.gateway.dispatch("MESSAGE_UPDATE", message, 1 << 9 | 1 << 12)
        self.fake.callbacks.append((found.id, kind, data))
        if request.query.get("with_response", "").lower() not in {"1", "true"}:
            return None  # 204 No Content, as Discord answers without ?with_response
        # Discord's interaction callback response: the interaction, and what it made.
        ephemeral = bool(int(data.get("flags", 0)) & 1 << 6)
        interaction = {
            "id": str(found.id),
            "type": found.kind,
            "response_message_loading": kind == 5,
            "response_message_ephemeral": ephemeral,
        }
        if message is not None:
            interaction["response_message_id"] = message["id"]
            return {"interaction": interaction, "resource": {"type": kind, "message": message}}
        return {"interaction": interaction}

    def put_commands(self, request: web.Request, body: Any) -> Any:
        if request.match_info["application_id"] != str(self.fake.world.application_id):
            raise MISSING_ACCESS
        return self.fake.world.overwrite_commands(body)

    def get_commands(self, request: web.Request, body: Any) -> Any:
        if request.match_info["application_id"] != str(self.fake.world.application_id):
            raise UNKNOWN_APPLICATION
        return self.fake.world.commands

    async def download(self, request: web.Request) -> web.StreamResponse:
        with self.fake.lock:
            self.fake.downloads_begun += 1
        self.fake.notify()
        await asyncio.get_running_loop().run_in_executor(None, self.fake.files_served.wait)
        url = f"{self.fake.base}{request.path}"
        with self.fake.lock:
            data = self.fake.world.files.get(url)
        if data is None:
            return _error(NOT_FOUND)
        kind = _content_type(request.match_info["filename"])  # with its charset, as the CDN
        return web.Response(body=data, headers={"Content-Type": kind})


def _snowflake(request: web.Request, name: str) -> int:
    value = request.match_info[name]
    if not value.isdigit():
        raise form_error(name, "NUMBER_TYPE_COERCE", f'Value "{value}" is not snowflake.')
    return int(value)


def _content_type(filename: str) -> str:
    lower = filename.lower()
    for suffix, kind in (
        (".png", "image/png"),
        (".jpg", "image/jpeg"),
        (".jpeg", "image/jpeg"),
        (".gif", "image/gif"),
        (".webp", "image/webp"),
        (".txt", "text/plain; charset=utf-8"),
        (".pdf", "application/pdf"),
    ):
        if lower.endswith(suffix):
            return kind
    return "application/octet-stream"


def _error(exc: ApiError, headers: dict[str, str] | None = None) -> web.Response:
    return _json(exc.body(), status=exc.status, headers=headers or {})


async def _body(request: web.Request) -> Any:
    if not request.can_read_body:
        return {}
    if request.content_type == "multipart/form-data":
        payload: Any = {}
        files: dict[int, tuple[str, bytes]] = {}
        reader = await request.multipart()
        async for part in reader:
            name = getattr(part, "name", None) or ""
            data = await part.read()  # type: ignore[union-attr]
            if name == "payload_json":
                payload = json.loads(bytes(data))
            elif name.startswith("files[") and name.endswith("]"):
                files[int(name[6:-1])] = (getattr(part, "filename", None) or "file", bytes(data))
        return payload, files
    raw = await request.read()
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return {"__invalid_json__": True}


def _json(value: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON response typed exactly ``application/json``, as Discord sends it (discord.py
    reads any other content type as text), through Discord's front (``Via``: a 429
    without it is Cloudflare's ban, not an API rate limit)."""
    return web.Response(
        body=json.dumps(value).encode(),
        status=status,
        headers={**(headers or {}), "Content-Type": "application/json", "Via": VIA},
    )


VOICE_MESSAGE = 1 << 13
"""IS_VOICE_MESSAGE: Discord shows the message as a voice message."""


def _check_voice(payload: dict[str, Any], attachments: list[dict[str, Any]]) -> None:
    """What Discord asks of a voice message: no text, one audio attachment carrying its
    ``duration_secs`` and a base64 ``waveform`` (at most 256 bytes)."""
    if payload.get("content"):
        raise form_error("content", "VOICE_MESSAGE_CONTENT", "Voice messages cannot have content")
    if len(attachments) != 1:
        raise form_error(
            "attachments", "VOICE_MESSAGE_ATTACHMENTS", "Voice messages need exactly one file"
        )
    [audio] = attachments
    if not isinstance(audio.get("duration_secs"), int | float) or audio["duration_secs"] <= 0:
        raise form_error(
            "attachments.0.duration_secs", "BASE_TYPE_REQUIRED", "This field is required"
        )
    try:
        wave = base64.b64decode(str(audio.get("waveform", "")), validate=True)
    except ValueError:
        wave = b""
    if not wave or len(wave) > 256:
        raise form_error("attachments.0.waveform", "BASE_TYPE_BAD_LENGTH", "Must be 1 to 256 bytes")
