"""The Discord fake's gateway: one WebSocket per connection, sessions that outlive it.

A connection gets HELLO (op 10) and must IDENTIFY (op 2) or RESUME (op 6) before
anything but a heartbeat (op 1, answered with op 11); otherwise it is closed with 4003.
IDENTIFY checks the token (4004), the intents (4013 for bits that do not exist, 4014 for
a privileged intent the application has not been granted) and a second IDENTIFY (4005);
then READY (seq 1) and one GUILD_CREATE per guild. Every dispatch (op 0) carries the
session's next sequence number and is kept, so that RESUME with a known session and seq
replays what came after it, in order and with the same numbers, and then RESUMED; an
unknown or invalidated session gets INVALID_SESSION (op 9, ``d: false``). Unknown
opcodes close with 4001, undecodable payloads with 4002, a wrong ``v`` with 4012.

With ``compress=zlib-stream`` every payload is a binary frame of one shared zlib stream
ending in a sync flush (``00 00 ff ff``), as discord.py asks for by default.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import WSMsgType, web

if TYPE_CHECKING:
    from tests.fakes.discord_api import DiscordFake

HELLO, HEARTBEAT, IDENTIFY, RESUME, RECONNECT, INVALID_SESSION, HEARTBEAT_ACK = (
    10,
    1,
    2,
    6,
    7,
    9,
    11,
)
KNOWN_OPS = {1, 2, 3, 4, 6, 8, 31}
ALL_INTENTS = (1 << 26) - 1
GUILDS = 1 << 0
GUILD_MEMBERS = 1 << 1
GUILD_PRESENCES = 1 << 8
GUILD_MESSAGES = 1 << 9
DIRECT_MESSAGES = 1 << 12
MESSAGE_CONTENT = 1 << 15
PRIVILEGED = {
    GUILD_MEMBERS: "members",
    GUILD_PRESENCES: "presences",
    MESSAGE_CONTENT: "message_content",
}


@dataclass
class Connection:
    ws: web.WebSocketResponse
    request: web.Request
    compress: bool
    queue: asyncio.Queue[dict[str, Any] | None] = field(default_factory=asyncio.Queue)
    zlib_stream: Any = field(default_factory=zlib.compressobj)

    async def write(self) -> None:
        while (payload := await self.queue.get()) is not None:
            data = json.dumps(payload)
            if self.compress:
                packed = self.zlib_stream.compress(data.encode()) + self.zlib_stream.flush(
                    zlib.Z_SYNC_FLUSH
                )
                await self.ws.send_bytes(packed)
            else:
                await self.ws.send_str(data)


@dataclass
class Session:
    id: str
    intents: int
    seq: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    conn: Connection | None = None
    valid: bool = True


@dataclass
class Gateway:
    fake: DiscordFake
    heartbeat_interval_ms: int = 41250
    replay_overlap: int = 0
    """Fault: RESUME also replays this many events the client had already seen (replay
    is at least once; a client must not act twice on one event)."""
    sessions: dict[str, Session] = field(default_factory=dict)
    connections: list[Connection] = field(default_factory=list)
    identifies: int = 0
    resumes: int = 0
    heartbeats: int = 0
    closes: list[int] = field(default_factory=list)

    # -- sending (any thread, under the fake's lock) ----------------------------------

    def _send(self, conn: Connection, payload: dict[str, Any]) -> None:
        self.fake.loop.call_soon_threadsafe(conn.queue.put_nowait, payload)

    def dispatch(self, name: str, data: dict[str, Any], intent: int = 0) -> None:
        for session in self.sessions.values():
            if session.valid and (intent == 0 or session.intents & intent):
                self._dispatch_to(session, name, data)

    def _dispatch_to(self, session: Session, name: str, data: dict[str, Any]) -> None:
        session.seq += 1
        payload = {"op": 0, "s": session.seq, "t": name, "d": data}
        session.events.append(payload)
        if session.conn is not None:
            self._send(session.conn, payload)
        self.fake.notify()

    def drop(self) -> int:
        """Abort every connection's TCP stream, as a network fault would."""
        dropped = 0
        for conn in list(self.connections):
            transport = conn.request.transport
            if transport is not None:
                self.fake.loop.call_soon_threadsafe(transport.abort)
                dropped += 1
        return dropped

    def invalidate(self, *, resumable: bool) -> None:
        for session in self.sessions.values():
            if session.conn is not None:
                self._send(
                    session.conn, {"op": INVALID_SESSION, "d": resumable, "s": None, "t": None}
                )
            if not resumable:
                session.valid = False

    def reconnect(self) -> None:
        for session in self.sessions.values():
            if session.conn is not None:
                self._send(session.conn, {"op": RECONNECT, "d": None, "s": None, "t": None})

    # -- the connection (on the fake's loop) ------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        compress = request.query.get("compress")
        conn = Connection(ws, request, compress == "zlib-stream")
        writer = asyncio.create_task(conn.write())
        with self.fake.lock:
            self.connections.append(conn)
        session: Session | None = None
        try:
            if request.query.get("v") != "10":
                await self._close(ws, 4012, "Invalid API version")
                return ws
            if request.query.get("encoding", "json") != "json" or compress not in {
                None,
                "zlib-stream",
            }:
                await self._close(ws, 4002, "Error while decoding payload.")
                return ws
            self._send_now(
                conn,
                {
                    "op": HELLO,
                    "d": {"heartbeat_interval": self.heartbeat_interval_ms},
                    "s": None,
                    "t": None,
                },
            )
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    if msg.type is WSMsgType.BINARY:
                        await self._close(ws, 4002, "Error while decoding payload.")
                    break
                try:
                    payload = json.loads(msg.data)
                    op = payload["op"]
                except (ValueError, KeyError, TypeError):
                    await self._close(ws, 4002, "Error while decoding payload.")
                    break
                outcome = self._receive(conn, session, op, payload.get("d"))
                if isinstance(outcome, tuple):
                    await self._close(ws, *outcome)
                    break
                session = outcome
        finally:
            with self.fake.lock:
                self.connections.remove(conn)
                if session is not None and session.conn is conn:
                    session.conn = None
                self.fake.notify()
            conn.queue.put_nowait(None)
            await asyncio.gather(writer, return_exceptions=True)
        return ws

    def _send_now(self, conn: Connection, payload: dict[str, Any]) -> None:
        conn.queue.put_nowait(payload)

    async def _close(self, ws: web.WebSocketResponse, code: int, reason: str) -> None:
        with self.fake.lock:
            self.closes.append(code)
            self.fake.notify()
        await ws.close(code=code, message=reason.encode())

    def _receive(
        self, conn: Connection, session: Session | None, op: int, data: Any
    ) -> Session | tuple[int, str] | None:
        with self.fake.lock:
            if op == HEARTBEAT:
                self.heartbeats += 1
                self._send_now(conn, {"op": HEARTBEAT_ACK, "d": None, "s": None, "t": None})
                return session
            if op == IDENTIFY:
                if session is not None:
                    return (4005, "Already authenticated.")
                return self._identify(conn, data)
            if op == RESUME:
                if session is not None:
                    return (4005, "Already authenticated.")
                return self._resume(conn, data)
            if op not in KNOWN_OPS:
                return (4001, "Unknown opcode.")
            if session is None:
                return (4003, "Not authenticated.")
            return session

    def _identify(self, conn: Connection, data: Any) -> Session | tuple[int, str]:
        if not isinstance(data, dict) or not isinstance(data.get("properties"), dict):
            return (4002, "Error while decoding payload.")
        if data.get("token") != self.fake.token:
            return (4004, "Authentication failed.")
        intents = data.get("intents")
        if not isinstance(intents, int) or intents < 0 or intents & ~ALL_INTENTS:
            return (4013, "Invalid intent(s).")
        for bit, name in PRIVILEGED.items():
            if intents & bit and name not in self.fake.privileged_intents:
                return (4014, "Disallowed intent(s).")
        self.identifies += 1
        session = Session(secrets.token_hex(16), intents, conn=conn)
        self.sessions[session.id] = session
        world = self.fake.world
        self._dispatch_to(
            session,
            "READY",
            {
                "v": 10,
                "user": world.bot,
                "guilds": [{"id": str(g), "unavailable": True} for g in world.guilds],
                "session_id": session.id,
                "resume_gateway_url": self.fake.gateway_url,
                "session_type": "normal",
                "application": {"id": str(world.application_id), "flags": 0},
                "private_channels": [],
                "relationships": [],
                "presences": [],
                "user_settings": {},
                "guild_join_requests": [],
                "geo_ordered_rtc_regions": [],
            },
        )
        if intents & GUILDS:
            for guild_id in world.guilds:
                self._dispatch_to(session, "GUILD_CREATE", world.guild_payload(guild_id))
        return session

    def _resume(self, conn: Connection, data: Any) -> Session | tuple[int, str] | None:
        if not isinstance(data, dict):
            return (4002, "Error while decoding payload.")
        if data.get("token") != self.fake.token:
            return (4004, "Authentication failed.")
        session = self.sessions.get(str(data.get("session_id")))
        seq = data.get("seq")
        if session is None or not session.valid:
            self._send_now(conn, {"op": INVALID_SESSION, "d": False, "s": None, "t": None})
            return None
        if not isinstance(seq, int) or seq > session.seq:
            return (4007, "Invalid seq.")
        self.resumes += 1
        session.conn = conn
        start = max(0, seq - self.replay_overlap)
        for payload in session.events:
            if payload["s"] > start:
                self._send_now(conn, payload)
        self._dispatch_to(session, "RESUMED", {})
        return session
