"""A fake signal-cli daemon for tests: ``signal-cli daemon --tcp --receive-mode=manual``
on 127.0.0.1, in its own thread, written from signal-cli's documentation (signal-cli(1),
signal-cli-jsonrpc(5)) and the shapes of its JSON output.

It speaks JSON-RPC 2.0 on a TCP socket, one JSON object a line each way, in
multi-account mode (every call names its ``account``). Its errors carry signal-cli's
codes and wording: -32700 parse error, -32600 "method field must be set", -32601
"Method not implemented", -32602 "Specified account does not exist", -1 user error,
-4 "Failed to send message due to untrusted identities" and -5 "Failed to send message
due to rate limiting" with each recipient's result (``retryAfterSeconds``) in
``data.response``. Stricter than signal-cli on one point: a parameter a modelled method
does not take is refused (-32602), since signal-cli ignores it silently and such a name
is a bug of the caller.

Receiving is ``--receive-mode=manual``: a connection asks for events with
``subscribeReceive`` and gets each as a ``receive`` notification (``params.subscription``
and ``params.result``, the envelope). Envelopes wait (as on Signal's servers) while no
connection is subscribed; the daemon reads every connection, so one that closes is
unsubscribed at once. The people's phones send a delivery receipt for each message the
bot sends them; a phone that is off (:attr:`SignalCliFake.offline`) sends its receipts
when it is back (:meth:`SignalCliFake.back_online`). :meth:`SignalCliFake.restart`
stops the daemon and starts it again on the same port (connections are cut).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
import threading
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

import anyio

from tests.fakes.loop_thread import LoopThread
from tests.fakes.signal_cli_state import JSON, Chat, Message, Person, World

T = TypeVar("T")

STYLES = {"BOLD", "ITALIC", "SPOILER", "STRIKETHROUGH", "MONOSPACE"}
TEXT_STYLE = re.compile(r"^(\d+):(\d+):([A-Z]+)$")
DATA_URI = re.compile(r"^data:([\w.+/-]+)(?:;filename=([^;,]+))?;base64,(.*)$", re.DOTALL)
PARAMS: dict[str, set[str]] = {
    "send": {
        "recipient",
        "recipients",
        "groupId",
        "groupIds",
        "message",
        "textStyle",
        "textStyles",
        "attachment",
        "attachments",
        "quoteTimestamp",
        "quoteAuthor",
        "quoteMessage",
        "editTimestamp",
        "mention",
        "mentions",
        "voiceNote",
    },
    "sendTyping": {"recipient", "recipients", "groupId", "groupIds", "stop"},
    "getAttachment": {"id", "recipient", "groupId"},
    "getUserStatus": {"recipient", "recipients"},
    "listAccounts": set(),
    "trust": {"recipient", "trustAllKnownKeys", "verifiedSafetyNumber"},
}
UNMODELLED = {"sendReaction", "sendReceipt", "remoteDelete", "listGroups", "listContacts"}


class JsonRpcError(Exception):
    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.error = {"code": code, "message": message, "data": data}


class SignalCliFake(LoopThread):
    name = "signal-cli fake"

    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.calls: list[tuple[str, JSON]] = []
        self.failures: list[str] = []
        self.offline: set[str] = set()
        """People (UUIDs) whose phones are off: their receipts are owed until they are back."""
        self.owed: list[tuple[Person, int]] = []
        self.receipt_delay = 0.2
        """How long a message takes to reach a recipient's phone and its delivery receipt
        to come back through Signal's servers (a push, a fetch, a reply: a fraction of a
        second on a good network; never instant)."""
        self.rate_limited: deque[int] = deque()
        """The next sends are refused as rate-limited, each with this retryAfterSeconds."""
        self.blocked_until: dict[str, float] = {}
        self.violations: list[str] = []
        """Sends to a chat before the retry-after it was given ran out."""
        self.lose_answers = 0
        """The next sends are carried out but their answer is lost."""
        self.cut_before = 0
        """The next sends' connections are cut before they are carried out (the daemon
        crashed, say)."""
        self.port = 0
        self.up = False
        self.delivered = 0
        """Envelopes written to a subscribed connection."""
        self._pending: deque[JSON] = deque()
        self._subscribed: dict[asyncio.StreamWriter, int] = {}
        self._connections: set[asyncio.StreamWriter] = set()
        self._subscriptions = 0
        self.answered: set[int] = set()
        """Timestamps of the sends whose answer was written to the bot: it knows them."""
        self.most_streams = 0
        """The most connections subscribed at one time."""
        self.attachments_served = threading.Event()
        """Cleared: a ``getAttachment`` waits until it is set again (a slow disk)."""
        self.attachments_served.set()
        self.attachments_asked = 0
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._server: asyncio.Server | None = None

    # -- lifecycle -------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    @property
    def streams(self) -> int:
        """Connections subscribed to the events."""
        return len(self._subscribed)

    async def _opened(self) -> None:
        await self._start()

    async def _closing(self) -> None:
        self.attachments_served.set()  # no call left waiting in a thread
        await self._stop()

    async def _start(self) -> None:
        server = await asyncio.start_server(
            self._connection, "127.0.0.1", self.port, limit=64 * 1024 * 1024
        )
        self._server = server
        self.port = int(server.sockets[0].getsockname()[1])
        self.up = True
        self._changed()

    async def _stop(self) -> None:
        self.up = False
        if self._server is not None:
            self._server.close()
            for writer in list(self._connections):
                writer.transport.abort()
            await self._server.wait_closed()
            self._server = None
        # Each cut connection's handler ends and closes its socket on this loop: wait for
        # them, so no socket outlives the daemon (the real one closes them as it exits).
        for _ in range(200):
            if not self._connections:
                break
            await asyncio.sleep(0.005)
        self._changed()

    def stop(self) -> None:
        """The daemon goes down (its port refuses connections)."""
        self.run(self._stop())

    def start(self) -> None:
        """The daemon comes back on the same port."""
        self.run(self._start())

    def restart(self) -> None:
        self.stop()
        self.start()

    # -- the people ------------------------------------------------------------------

    def say(
        self,
        text: str,
        who: Person,
        *,
        group: bool = False,
        mention: bool = False,
        attachments: list[tuple[bytes, str, str | None]] | None = None,
    ) -> int:
        """``who`` sends ``text`` to the bot (in the group with ``group``); its timestamp."""
        with self._lock:
            chat = self.world.chats[self.world.group_id] if group else self.world.dm(who)
            event = self.world.data_message(
                who, text, chat, mention=mention, attachments=attachments or []
            )
        self.push(event)
        return int(event["envelope"]["timestamp"])

    def react(self, who: Person, emoji: str, target: int, *, group: bool = False) -> None:
        with self._lock:
            chat = self.world.chats[self.world.group_id] if group else self.world.dm(who)
            reaction = {
                "emoji": emoji,
                "targetAuthor": self.world.bot.number,
                "targetAuthorNumber": self.world.bot.number,
                "targetAuthorUuid": self.world.bot.uuid,
                "targetSentTimestamp": target,
                "isRemove": False,
            }
            event = self.world.data_message(who, "", chat, reaction=reaction)
        self.push(event)

    def sync_sent(self, text: str, to: Person) -> int:
        """The bot's account sent ``text`` from another of its devices (a phone)."""
        with self._lock:
            stamp = self.world.stamp()
            sent = {
                "destination": to.number,
                "destinationNumber": to.number,
                "destinationUuid": to.uuid,
                "timestamp": stamp,
                "message": text,
                "expiresInSeconds": 0,
                "viewOnce": False,
            }
            event = self.world.envelope(self.world.bot, {"syncMessage": {"sentMessage": sent}})
            event["envelope"]["sourceDevice"] = 2
        self.push(event)
        return stamp

    def push(self, event: JSON) -> None:
        """An envelope for the account: to the streams open now, else kept for later."""
        with self._lock:
            self._pending.append(event)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._flush)

    def _receipts(self, phones: list[Person], timestamp: int) -> None:
        """The recipients' phones got the message and say so."""
        with self._lock:
            for person in phones:
                self._pending.append(self.world.receipt(person, [timestamp]))
        self._flush()

    def back_online(self, who: Person) -> None:
        """``who``'s phone is on again: it fetches what it was sent and sends the receipts."""
        self.offline.discard(who.uuid)
        with self._lock:
            owed = [stamp for person, stamp in self.owed if person == who]
            self.owed = [(p, stamp) for p, stamp in self.owed if p != who]
        for stamp in owed:
            self.push(self.world.receipt(who, [stamp]))

    def _flush(self) -> None:
        with self._lock:
            if not self._subscribed:
                return
            while self._pending:
                event = self._pending.popleft()
                for writer, subscription in self._subscribed.items():
                    note = {"subscription": subscription, "result": event}
                    _write(writer, {"jsonrpc": "2.0", "method": "receive", "params": note})
                    self.delivered += 1
        self._changed()

    # -- what the bot did --------------------------------------------------------------

    def chat(self, who: Person | None = None) -> Chat:
        if who is None:
            return self.world.chats[self.world.group_id]
        return self.world.dm(who)

    def mine(self, chat: Chat) -> list[Message]:
        with self._lock:
            return [m for m in chat.messages if m.author == self.world.bot]

    def calls_of(self, method: str) -> list[JSON]:
        return [params for name, params in self.calls if name == method]

    async def wait_for(self, predicate: Callable[[], T | None], timeout: float = 10.0) -> T:
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

    # -- HTTP ------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break  # the client closed: its subscription ends now
                try:
                    item = json.loads(line)
                except ValueError as exc:
                    _write(writer, _error(None, JsonRpcError(-32700, str(exc))))
                    continue
                if isinstance(item, dict) and item.get("method") == "getAttachment":
                    self.attachments_asked += 1
                    self._changed()
                    await asyncio.get_running_loop().run_in_executor(
                        None, self.attachments_served.wait
                    )
                answer = self._one(writer, item)
                if answer is _CUT:
                    writer.transport.abort()
                    break
                if isinstance(answer, dict):
                    _write(writer, answer)
                    await writer.drain()
                    result = answer.get("result")
                    if isinstance(result, dict) and isinstance(result.get("timestamp"), int):
                        self.answered.add(result["timestamp"])
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            self._connections.discard(writer)
            with self._lock:
                self._subscribed.pop(writer, None)
            writer.close()
            self._changed()

    def _one(self, writer: asyncio.StreamWriter, item: object) -> object:
        if not isinstance(item, dict) or "method" not in item:
            return _error(None, JsonRpcError(-32600, "method field must be set"))
        ident, method = item.get("id"), item["method"]
        params = item.get("params") or {}
        try:
            if method == "subscribeReceive":
                result: object = self._subscribe(writer, dict(params))
            else:
                result = self._call(writer, str(method), dict(params))
        except JsonRpcError as failure:
            return _error(ident, failure)
        finally:
            self._changed()
        if result is _CUT:
            return _CUT
        return None if ident is None else {"jsonrpc": "2.0", "result": result, "id": ident}

    def _subscribe(self, writer: asyncio.StreamWriter, params: JSON) -> int:
        account = params.get("account")
        if account is not None and account != self.world.bot.number:
            raise JsonRpcError(-32602, "Specified account does not exist")
        with self._lock:
            subscription = self._subscriptions
            self._subscriptions += 1
            self._subscribed[writer] = subscription
            self.most_streams = max(self.most_streams, len(self._subscribed))
        asyncio.get_running_loop().call_soon(self._flush)
        return subscription

    def _call(self, writer: asyncio.StreamWriter, method: str, params: JSON) -> object:
        if method in UNMODELLED:
            self.failures.append(f"the bot called {method}, which the fake does not model")
        if method not in PARAMS:
            raise JsonRpcError(-32601, "Method not implemented")
        account = params.pop("account", None)
        if method != "listAccounts" and account != self.world.bot.number:
            raise JsonRpcError(-32602, "Specified account does not exist")
        unknown = set(params) - PARAMS[method]
        if unknown:
            raise JsonRpcError(-32602, f"Unknown parameter(s): {sorted(unknown)}")
        self.calls.append((method, params))
        with self._lock:
            if method == "send":
                return self._send(params)
            if method == "sendTyping":
                self._targets(params)
                return {}
            if method == "getAttachment":
                return self._attachment(params)
            if method == "getUserStatus":
                return self._status(params)
            if method == "trust":
                return self._trust(params)
            return [{"number": self.world.bot.number}]  # listAccounts

    # -- methods -----------------------------------------------------------------------

    def _targets(self, params: JSON) -> tuple[Chat, list[Person]]:
        recipients = _many(params, "recipient")
        groups = _many(params, "groupId")
        if not recipients and not groups:
            raise JsonRpcError(-1, "No recipients given")
        if groups:
            chat = self.world.chats.get(str(groups[0]))
            if chat is None:
                raise JsonRpcError(-1, f"Failed to send to group: Group not found: {groups[0]}")
            return chat, [p for p in chat.members if p != self.world.bot]
        person = self.world.person(str(recipients[0]))
        if person is None:
            raise JsonRpcError(-1, f"The user {recipients[0]} is not registered.")
        return self.world.dm(person), [person]

    def _send(self, params: JSON) -> object:
        chat, people = self._targets(params)
        if self.cut_before:
            self.cut_before -= 1
            return _CUT
        now = asyncio.get_running_loop().time()
        if self.blocked_until.get(chat.key, 0.0) > now:
            self.violations.append(chat.key)
        styles = [_style(s) for s in _many(params, "textStyle")]
        attachments = [_data_uri(a) for a in _many(params, "attachment")]
        voice = params.get("voiceNote", False)
        if not isinstance(voice, bool):
            raise JsonRpcError(-32602, "voiceNote must be a boolean")
        quote = params.get("quoteTimestamp")
        if quote is not None and not params.get("quoteAuthor"):
            raise JsonRpcError(-1, "Quote author parameter is missing")
        timestamp = self.world.stamp()
        if self.rate_limited:
            wait = self.rate_limited.popleft()
            self.blocked_until[chat.key] = now + wait
            results = [_result(p, "RATE_LIMIT_FAILURE", retryAfterSeconds=wait) for p in people]
            raise JsonRpcError(
                -5,
                "Failed to send message due to rate limiting",
                {"response": {"timestamp": timestamp, "results": results}},
            )
        if any(p.uuid in self.world.untrusted for p in people):
            results = [
                _result(p, "IDENTITY_FAILURE" if p.uuid in self.world.untrusted else "SUCCESS")
                for p in people
            ]
            if all(p.uuid in self.world.untrusted for p in people):
                raise JsonRpcError(
                    -4,
                    "Failed to send message due to untrusted identities",
                    {"response": {"timestamp": timestamp, "results": results}},
                )
        text = str(params.get("message") or "")
        edit = params.get("editTimestamp")
        if edit is not None:
            target = chat.find(int(edit))
            if target is None or target.author != self.world.bot:
                self.failures.append(f"an edit of {edit}, which is no message of the bot's")
            else:
                target.text, target.styles, target.edits = text, styles, target.edits + 1
        else:
            chat.messages.append(
                Message(timestamp, self.world.bot, text, styles, attachments, quote, voice=voice)
            )
            phones = [p for p in people if p.uuid not in self.offline | self.world.untrusted]
            self.owed.extend((p, timestamp) for p in people if p.uuid in self.offline)
            asyncio.get_running_loop().call_later(
                self.receipt_delay, self._receipts, phones, timestamp
            )
        if self.lose_answers:
            self.lose_answers -= 1
            return _CUT
        results = [_result(p, "SUCCESS") for p in people]
        return {"timestamp": timestamp, "results": results}

    def _attachment(self, params: JSON) -> object:
        ident = str(params.get("id") or "")
        if not ident:
            raise JsonRpcError(-1, "Missing attachment id parameter")
        stored = self.world.attachments.get(ident)
        if stored is None:
            raise JsonRpcError(-1, f"Could not find attachment with ID: {ident}")
        return {"data": base64.b64encode(stored[0]).decode("ascii")}

    def _status(self, params: JSON) -> object:
        out = []
        for recipient in _many(params, "recipient"):
            everyone = [self.world.bot, *self.world.people.values()]
            person = next((p for p in everyone if recipient in p.ids()), None)
            out.append(
                {
                    "recipient": recipient,
                    "number": person.number if person else recipient,
                    "uuid": person.uuid if person else None,
                    "isRegistered": person is not None,
                }
            )
        return out

    def _trust(self, params: JSON) -> object:
        person = self.world.person(str(params.get("recipient") or ""))
        if person is None:
            raise JsonRpcError(-1, "Unknown recipient")
        if not params.get("trustAllKnownKeys") and not params.get("verifiedSafetyNumber"):
            raise JsonRpcError(
                -1, "You need to specify a fingerprint/safety number or --trust-all-known-keys"
            )
        self.world.untrusted.discard(person.uuid)
        return {}


_CUT = object()


def _write(writer: asyncio.StreamWriter, message: JSON) -> None:
    if not writer.is_closing():
        writer.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")


def _error(ident: object, failure: JsonRpcError) -> JSON:
    return {"jsonrpc": "2.0", "error": failure.error, "id": ident}


def _many(params: JSON, name: str) -> list[Any]:
    """A parameter that takes several values: one value, or a list (named or plural)."""
    value = params.get(name, params.get(f"{name}s"))
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _style(text: object) -> tuple[int, int, str]:
    match = TEXT_STYLE.match(str(text))
    if match is None:
        raise JsonRpcError(-1, f"Invalid textStyle syntax ({text}) expected 'start:length:STYLE'")
    if match.group(3) not in STYLES:
        raise JsonRpcError(-1, f"Invalid style: {match.group(3)}")
    return int(match.group(1)), int(match.group(2)), match.group(3)


def _data_uri(text: object) -> JSON:
    match = DATA_URI.match(str(text))
    if match is None:
        raise JsonRpcError(-1, "Failed to send message: attachment is no file or data URI")
    try:
        data = base64.b64decode(match.group(3), validate=True)
    except binascii.Error:
        raise JsonRpcError(-1, "Failed to send message: invalid base64 in data URI") from None
    return {"contentType": match.group(1), "filename": match.group(2), "size": len(data)}


def _result(person: Person, kind: str, **extra: object) -> JSON:
    address = {"uuid": person.uuid, "number": person.number}
    return {"recipientAddress": address, "type": kind, **extra}


__all__ = ["SignalCliFake"]
