"""The OpenAI-compatible API, served on a transport's listener (the web channel's):
``GET /v1/models`` and ``POST /v1/chat/completions`` (streamed as server-sent events, or
whole), for any frontend that speaks OpenAI's chat API (the ``openai`` SDK, the ``llm``
CLI, Open WebUI).

- **Keys are people.** ``Authorization: Bearer <key>`` names a key made by ``thalos-bot
  api key create --person ID``: the request runs as that person (their memory, roles and
  budget). No key, an unknown, revoked or expired key: 401; a model (agent) the key may
  not use: 403; an unknown model: 404. Errors have OpenAI's shape.
- **Sessions.** A frontend sends the whole history each time; we keep the session. A
  conversation is named by the request's ``user`` field or an ``X-Thalos-Conversation``
  header when given, else by the hash of its first user message, always within the key.
  Only the last message is new: the daemon already has the rest. When the history sent
  no longer matches what was said (an earlier message edited), or the model changes, a
  new session starts. What each conversation last saw is kept in the database (across
  restarts and replicas). The bot's commands (``/status``, ``/new`` ...) work as a
  message.
- **One request at a time per conversation** (429 ``conversation_busy`` meanwhile), a
  rate limit per key (429 ``rate_limit_exceeded`` with ``Retry-After``), and a client
  that leaves mid-answer cancels its turn.
- **Tools run in the daemon.** Client-side ``tools`` are refused (400). A tool that needs
  an approval is refused here (there is nobody to ask on this connection).
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from thalos_bot.api.body import digest as _digest
from thalos_bot.api.body import read_chat
from thalos_bot.api.body import text_of as _text
from thalos_bot.api.rate import KeyRate
from thalos_bot.api.routed import ApiFirst
from thalos_bot.api.sink import ApiSink, ConversationClaims, Receiving
from thalos_bot.channels import notices
from thalos_bot.channels.listeners.body import BodyCap, BodyTooLargeError, too_large
from thalos_bot.channels.listeners.served import ApiMaker, Served, Serving
from thalos_bot.channels.listeners.shared_rate import RateBuckets, SharedRate
from thalos_bot.channels.ports import (
    Delivery,
    InboundMessage,
    Notice,
    Sender,
    TextUpdate,
    TurnStarted,
)
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.domain.errors import ErrorCode
from thalos_bot.domain.events import TurnCompleted, TurnFailed
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.people import People
from thalos_bot.domain.security import SecurityContext
from thalos_bot.storage.api_keys import ApiKey, SqliteApiKeys

PREFIX = "/v1/"
RATE_SCOPE = "api"
"""The keys' buckets in the shared store (replicas)."""
CONVERSATION = "api:"
"""The conversations of this API, among the web channel's (their deliveries come here)."""
TURN_TIMEOUT = 600.0
CANCEL_WAIT = 30.0
"""How long a cancelled turn may take to end before its conversation is freed anyway."""
TOO_MANY = "Rate limit reached for this API key: {} requests a minute. Try again in {} s."
BUSY = "This conversation is answering another request; send this one when that answer has ended."


RESTARTING = "The bot is restarting; send this request again in a moment."
"""A request the daemon's stop left unanswered (or cut): 503 with Retry-After, which an
OpenAI client retries by itself; nothing of it was kept."""


def _restarting() -> JSONResponse:
    answer = error(503, RESTARTING, "server_error", "restarting")
    answer.headers["retry-after"] = "1"
    return answer


def error(status: int, message: str, kind: str, code: str | None = None) -> JSONResponse:
    """OpenAI's error, answered with ``status``."""
    return JSONResponse(_error_body(message, kind, code), status_code=status)


def _error_body(message: str, kind: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@dataclass
class OpenAIApi:
    keys: SqliteApiKeys
    catalog: AgentCatalog
    people: People
    channel_id: ChannelId
    hand_over: Callable[[InboundMessage], None]
    rate: KeyRate | SharedRate = field(default_factory=lambda: KeyRate(60))
    """Requests a key may make a minute (replicas: counted for the whole bot)."""
    body_limit: int = 1024 * 1024
    """The most a request's body may weigh, counted as it arrives."""
    sink: ApiSink = field(default_factory=ApiSink)

    @property
    def served(self) -> Served:
        """The API's app (its bodies capped) and its paths, for the listener."""
        app = Starlette(routes=self.routes(), exception_handlers={BodyTooLargeError: too_large})
        limit = self.body_limit
        return Served(BodyCap(app, lambda _: limit), lambda path: path.startswith(PREFIX))

    def owns(self, conversation: ConversationId) -> bool:
        return conversation.startswith(CONVERSATION)

    def close(self) -> None:
        self.sink.close()

    def deliver(self, conversation: ConversationId, event: Delivery) -> None:
        self.sink.deliver(conversation, event)  # a request of the API waits for it

    def first(self, adapter: Serving) -> ApiFirst:
        return ApiFirst(self, adapter)

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/chat/completions", self.completions, methods=["POST"]),
        ]

    async def _key(self, request: Request) -> ApiKey | JSONResponse:
        given = request.headers.get("authorization", "")
        token = given.removeprefix("Bearer ").strip() if given.startswith("Bearer ") else ""
        key = await self.keys.find(token) if token else None
        if key is None:
            message = "Incorrect API key provided." if token else "You didn't provide an API key."
            return error(401, message, "invalid_request_error", "invalid_api_key")
        why = key.usable(datetime.now(UTC))
        if why is not None:
            message = f"Incorrect API key provided: {why}."
            return error(401, message, "invalid_request_error", "invalid_api_key")
        wait = math.ceil(await self.rate.wait(key.id))
        if wait > 0:
            limited = error(
                429, TOO_MANY.format(self.rate.per_minute, wait), "requests", "rate_limit_exceeded"
            )
            limited.headers["retry-after"] = str(wait)
            return limited
        return key

    async def models(self, request: Request) -> Response:
        key = await self._key(request)
        if isinstance(key, JSONResponse):
            return key
        agents = [a for a in self.catalog if key.agent in (None, a.id)]
        data = [
            {"id": a.id, "object": "model", "created": 0, "owned_by": "thalos-bot"} for a in agents
        ]
        return JSONResponse({"object": "list", "data": data})

    async def completions(self, request: Request) -> Response:
        key = await self._key(request)
        if isinstance(key, JSONResponse):
            return key
        try:
            body = await request.json()
        except (ValueError, RecursionError):  # not JSON, or nested past the parser
            return error(400, "The body is not JSON.", "invalid_request_error")
        chat = read_chat(body)
        if isinstance(chat, str):
            return error(400, chat, "invalid_request_error")
        model = chat.model
        if self.catalog.find(model) is None:
            missing = f"The model `{model}` does not exist."
            return error(404, missing, "invalid_request_error", "model_not_found")
        if key.agent is not None and key.agent != model:
            barred = f"This API key may not use the model `{model}`."
            return error(403, barred, "invalid_request_error", "model_not_allowed")
        messages = chat.messages
        named = chat.user or request.headers.get("x-thalos-conversation")
        firsts = [_text(m) for m in messages if m.get("role") == "user"][:1]
        seed = f"{key.id}\n{named}" if named else f"{key.id}\n{model}\n{firsts[0]}"
        conversation = CONVERSATION + hashlib.sha256(seed.encode()).hexdigest()[:24]
        person = self.people.get(key.person)
        context = person.context if person is not None else SecurityContext.of(key.person)
        sender = Sender(context, "api", key.id)
        # A new session unless what was said so far is what this conversation last saw
        # (kept in the database: it holds across restarts and replicas).
        new = await self.keys.said(conversation) != _digest(messages[:-1])
        text = _text(messages[-1])
        stream, usage_wanted = chat.stream, chat.include_usage
        if self.sink.closed:
            return _restarting()
        receive = await self.sink.claim(conversation)
        if receive is None:
            busy = error(429, BUSY, "requests", "conversation_busy")
            busy.headers["retry-after"] = "1"
            return busy
        turn = _Turn(self, conversation, key.id, sender, model, text, new, receive)
        if stream:
            return StreamingResponse(
                turn.chunks(usage_wanted, messages),
                media_type="text/event-stream",
                headers={"cache-control": "no-cache"},
                # Even when the client leaves between two chunks, or before the first.
                background=BackgroundTask(turn.let_go),
            )
        answer, usage, failed = await turn.whole()
        if failed is RESTARTING:
            return _restarting()
        if failed is not None:
            return error(500, failed, "server_error")
        said = _digest([*messages, {"role": "assistant", "content": answer}])
        await self.keys.keep_said(conversation, key.id, said, datetime.now(UTC))
        return JSONResponse(
            {
                "id": turn.id,
                "object": "chat.completion",
                "created": turn.created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            }
        )


def api_maker(
    keys: SqliteApiKeys,
    catalog: AgentCatalog,
    people: People,
    *,
    rates: RateBuckets | None = None,
    claims: ConversationClaims | None = None,
) -> ApiMaker:
    """How a transport gets the API on its listener (``api = true`` in its section).
    Replicas: ``rates`` counts each key's requests for the whole bot, ``claims`` holds
    each conversation busy for the whole bot (None: this process alone)."""

    def make(
        channel: ChannelId, hand_over: Callable[[InboundMessage], None], per_minute: int, body: int
    ) -> OpenAIApi:
        local = KeyRate(per_minute)
        rate: KeyRate | SharedRate = local
        if rates is not None:
            rate = SharedRate(rates, RATE_SCOPE, per_minute, per_minute, local.take)
        sink = ApiSink(claims=claims)
        return OpenAIApi(keys, catalog, people, channel, hand_over, rate, body, sink)

    return make


@dataclass
class _Turn:
    api: OpenAIApi
    conversation: str
    key_id: str
    sender: Sender
    model: str
    text: str
    new_session: bool
    receive: Receiving
    handed: bool = False
    """The message went to the pump."""
    finished: bool = False
    """Its answer ended (or the command was handled)."""
    id: str = field(default_factory=lambda: "chatcmpl-" + secrets.token_hex(12))
    created: int = field(default_factory=lambda: int(time.time()))

    def _send(self, text: str) -> anyio.Event:
        handled = anyio.Event()
        message = InboundMessage(
            self.api.channel_id,
            ConversationId(self.conversation),
            self.sender,
            text,
            datetime.now(UTC),
            handled,
        )
        self.api.hand_over(message)
        return handled

    async def _command(self, text: str) -> bool:
        """Send the command ``text`` and wait until the pump handled it, its replies
        dropped; False when the daemon's stop came first (a message the pump no longer
        reads is never handled: the stop's word for this request ends the wait)."""
        handled = self._send(text)
        stopped = False
        async with anyio.create_task_group() as group:

            async def replies() -> None:
                nonlocal stopped
                async for event in self.receive:
                    if _stopping(event):
                        stopped = True
                        group.cancel_scope.cancel()

            group.start_soon(replies)
            await handled.wait()
            group.cancel_scope.cancel()
        while not stopped:  # what came with the handling, dropped too
            try:
                event = self.receive.receive_nowait()
            except anyio.WouldBlock:
                break
            stopped = _stopping(event)
        return not stopped

    async def events(self) -> AsyncIterator[Delivery]:
        """The deliveries of this turn: what the pump says until the message is handled."""
        receive = self.receive
        try:
            # The agent the model names, in a session of its own.
            if self.new_session and not await self._command(f"/new {self.model}"):
                yield Notice(notices.shutting_down(), "warning")  # come back
                return
            handled = self._send(self.text)
            self.handed = True
            started = False

            async def close_when_handled() -> None:
                # A command ends when it is handled; a turn's final may come after that
                # (through the outbox), so a turn ends at its terminal event.
                await handled.wait()
                if not started:
                    await self.api.sink.done(self.conversation, receive)

            with anyio.fail_after(TURN_TIMEOUT):
                async with anyio.create_task_group() as group:
                    group.start_soon(close_when_handled)
                    group.start_soon(self.api.sink.keep, self.conversation, receive)
                    async for event in receive:
                        started = started or isinstance(event, TurnStarted)
                        yield event
                        if isinstance(event, TurnCompleted | TurnFailed) or _stopping(event):
                            break  # (the stop's word: no more comes here)
                    group.cancel_scope.cancel()
            self.finished = True
        finally:
            await self.let_go()

    async def let_go(self) -> None:
        """The request ends: when its answer had not, the client left mid-answer (or it
        took too long), so the turn is cancelled too, not paid for to the end. The
        conversation stays busy until the cancelled turn has ended (its ending is not
        taken for the next request's), then it is free. Once only."""
        if self.handed and not self.finished and not self.api.sink.closed:
            # (A stop cancels every turn itself: no /cancel to a pump that has stopped.)
            self.finished = True
            self._send("/cancel")
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WAIT):
                async for event in self.receive:
                    # The turn's own ending, or the pump's word that there was no turn.
                    if isinstance(event, TurnCompleted | TurnFailed | Notice):
                        break
        await self.api.sink.done(self.conversation, self.receive)

    async def whole(self) -> tuple[str, dict[str, int], str | None]:
        parts: list[str] = []
        usage = _usage(None)
        failed: str | None = None
        async for event in self.events():
            if isinstance(event, TurnCompleted):
                parts = [event.text]
                usage = _usage(event)
            elif isinstance(event, TurnFailed) and event.error.code is ErrorCode.CANCELLED:
                failed = RESTARTING  # only the daemon's stop cancels a waiting request's turn
            elif isinstance(event, TurnFailed):
                failed = event.error.detail or "The turn failed."
            elif _stopping(event):
                failed = RESTARTING  # no answer, or one the stop cut: come back
            elif isinstance(event, Notice) and not any(parts):
                parts.append(event.text)
        return "".join(parts), usage, failed

    async def chunks(
        self, usage_wanted: bool, messages: list[dict[str, Any]]
    ) -> AsyncIterator[str]:
        yield self._chunk({"role": "assistant", "content": ""})
        sent = ""
        usage = _usage(None)
        stopped = False
        async for event in self.events():
            if _stopping(event):
                stopped = True  # (the last of the events: they end once it is read)
            elif isinstance(event, TextUpdate) and event.text:
                sent += event.text
                yield self._chunk({"content": event.text})
            elif isinstance(event, TurnCompleted):
                usage = _usage(event)
                rest = event.text[len(sent) :] if event.text.startswith(sent) else ""
                if rest:
                    yield self._chunk({"content": rest})
                sent = event.text
            elif isinstance(event, TurnFailed):
                yield self._chunk({"content": f"\n\n[{event.error.detail or 'The turn failed.'}]"})
            elif isinstance(event, Notice) and not sent:
                yield self._chunk({"content": event.text})
                sent = event.text
        if stopped:
            # The answer's 200 is sent: the stop is said as OpenAI's error in the stream,
            # which its clients raise (the request is made again; none of it was kept).
            yield _sse(_error_body(RESTARTING, "server_error", "restarting"))
            return
        said = _digest([*messages, {"role": "assistant", "content": sent}])
        await self.api.keys.keep_said(self.conversation, self.key_id, said, datetime.now(UTC))
        yield self._chunk({}, finish="stop")
        if usage_wanted:
            yield _sse({**self._head(), "choices": [], "usage": usage})
        yield "data: [DONE]\n\n"

    def _head(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }

    def _chunk(self, delta: dict[str, str], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse({**self._head(), "choices": [choice]})


def _stopping(event: Delivery) -> bool:
    """The daemon's stop, told to a waiting request (:meth:`ApiSink.close`)."""
    return isinstance(event, Notice) and event.text == notices.shutting_down()


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def _usage(event: TurnCompleted | None) -> dict[str, int]:
    if event is None:
        return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    used = event.usage
    prompt = used.input_tokens + used.cache_read_tokens + used.cache_write_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": used.output_tokens,
        "total_tokens": prompt + used.output_tokens,
    }
