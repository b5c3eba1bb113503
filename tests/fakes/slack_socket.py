"""Socket Mode, as the Slack fake speaks it.

``apps.connections.open`` (app token) hands out a one-time WebSocket URL. On connecting,
the server says ``hello``; then every event, button press and slash command comes as an
envelope ``{"envelope_id", "type", "payload", "accepts_response_payload"}`` (events also
carry ``retry_attempt`` and ``retry_reason``) that the app must acknowledge by sending
``{"envelope_id": ...}`` back within 3 seconds. An event not acknowledged in time, or in
flight on a connection that dropped, is delivered again with ``retry_attempt`` one
higher (up to 3 retries); an unacknowledged button press or slash command is not retried
(Slack shows the person an error instead). ``disconnect`` envelopes ask the app to
reconnect (``refresh_requested``, ``warning``).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

ACK_TIMEOUT = 3.0
MAX_RETRIES = 3


@dataclass(slots=True)
class Envelope:
    id: str
    type: str
    payload: dict[str, Any]
    accepts_response_payload: bool
    attempt: int = 0
    reason: str = ""
    acked: bool = False
    response: dict[str, Any] | None = None
    """The payload the app sent with its ack (slash commands may answer this way)."""
    deliveries: int = 0
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    on: web.WebSocketResponse | None = field(default=None, repr=False)
    """The connection it was last sent on."""

    @property
    def echo(self) -> bool:
        """An event of the bot's own post (Slack sends those back too)."""
        event = self.payload.get("event")
        return isinstance(event, dict) and "bot_id" in event

    def wire(self) -> str:
        body: dict[str, Any] = {
            "envelope_id": self.id,
            "payload": self.payload,
            "type": self.type,
            "accepts_response_payload": self.accepts_response_payload,
        }
        if self.type == "events_api":
            body["retry_attempt"] = self.attempt
            body["retry_reason"] = self.reason
        return json.dumps(body)


class SocketMode:
    """The WebSocket side. Runs on the fake's loop; ``changed`` wakes the waiters."""

    def __init__(self, app_id: str, changed: Callable[[], None]) -> None:
        self.app_id = app_id
        self.changed = changed
        self.ack_timeout = ACK_TIMEOUT
        self.tickets: set[str] = set()
        self.sockets: list[tuple[web.WebSocketResponse, web.Request]] = []
        self.envelopes: dict[str, Envelope] = {}
        self.order: list[str] = []
        self.connections = 0
        """WebSocket connections accepted so far."""
        self.most_live = 0
        """The most connections open at one time."""
        self.lose_acks = 0
        """Acks to ignore, as if they were lost on the way (the envelope is retried): of
        what people do, not of the echoes of the bot's own posts, whose acks may still be
        on their way when a test asks for the next one to be lost."""
        self.stray_acks: list[str] = []
        """Acks of envelope ids the server never sent (or already had acked)."""
        self.url_of: Callable[[str], str] = lambda ticket: ticket

    def open_url(self) -> str:
        ticket = secrets.token_hex(16)
        self.tickets.add(ticket)
        return self.url_of(ticket)

    @property
    def live(self) -> list[web.WebSocketResponse]:
        return [ws for ws, _ in self.sockets if not ws.closed]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self.tickets:
            return web.Response(status=401, text="invalid ticket")
        self.tickets.discard(ticket)  # one connection per ticket
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.sockets.append((ws, request))
        self.connections += 1
        self.most_live = max(self.most_live, len(self.live))
        await ws.send_str(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": len(self.live),
                    "debug_info": {"host": "applink-fake", "approximate_connection_time": 3600},
                    "connection_info": {"app_id": self.app_id},
                }
            )
        )
        self.changed()
        for envelope_id in self.order:  # what the last connection left unacknowledged
            envelope = self.envelopes[envelope_id]
            if envelope.acked or envelope.timer is not None:
                continue
            if envelope.deliveries:
                self._retry(envelope, "connection_failed")
            else:
                self._send(envelope)  # pushed while no connection was open
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._on_text(message.data)
        finally:
            for envelope in self.envelopes.values():  # in flight on it: resent elsewhere
                if envelope.on is ws and not envelope.acked and envelope.timer is not None:
                    envelope.timer.cancel()
                    envelope.timer = None
            self.changed()
        return ws

    def _on_text(self, data: str) -> None:
        try:
            body = json.loads(data)
        except json.JSONDecodeError:
            self.stray_acks.append(data[:80])
            return
        envelope_id = body.get("envelope_id") if isinstance(body, dict) else None
        envelope = self.envelopes.get(str(envelope_id))
        if envelope is None or envelope.acked:
            self.stray_acks.append(str(envelope_id))
            return
        if self.lose_acks > 0 and not envelope.echo:
            self.lose_acks -= 1
            return
        envelope.acked = True
        payload = body.get("payload")
        envelope.response = payload if isinstance(payload, dict) else None
        if envelope.timer is not None:
            envelope.timer.cancel()
            envelope.timer = None
        self.changed()

    def push(self, kind: str, payload: dict[str, Any], *, accepts: bool = False) -> Envelope:
        envelope = Envelope(str(uuid.uuid4()), kind, payload, accepts)
        self.envelopes[envelope.id] = envelope
        self.order.append(envelope.id)
        self._send(envelope)
        return envelope

    def _send(self, envelope: Envelope) -> None:
        live = self.live
        if not live:
            return  # waits for the next connection
        envelope.deliveries += 1
        envelope.on = live[-1]
        loop = asyncio.get_running_loop()
        loop.create_task(live[-1].send_str(envelope.wire()))  # noqa: RUF006 - fake's loop
        envelope.timer = loop.call_later(self.ack_timeout, self._timed_out, envelope)
        self.changed()

    def _timed_out(self, envelope: Envelope) -> None:
        envelope.timer = None
        if not envelope.acked:
            self._retry(envelope, "timeout")

    def _retry(self, envelope: Envelope, reason: str) -> None:
        if envelope.type != "events_api" or envelope.attempt >= MAX_RETRIES:
            return
        envelope.attempt += 1
        envelope.reason = reason
        self._send(envelope)

    async def drop(self) -> None:
        """Cut every connection without a close frame (a network failure)."""
        for ws, request in self.sockets:
            if not ws.closed and request.transport is not None:
                request.transport.abort()
        for envelope in self.envelopes.values():
            if envelope.timer is not None and not envelope.acked:
                envelope.timer.cancel()
                envelope.timer = None  # resent on the next connection
        self.changed()

    async def disconnect(self, reason: str) -> None:
        """Ask the app to reconnect; the old connection closes once a new one is up."""
        live = self.live
        for ws in live:
            await ws.send_str(
                json.dumps({"type": "disconnect", "reason": reason, "debug_info": {"host": "x"}})
            )

    async def close_all(self) -> None:
        for ws in self.live:
            await ws.close()
