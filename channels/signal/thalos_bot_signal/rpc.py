"""signal-cli's daemon over its JSON-RPC socket (``--tcp`` or ``--socket``), one JSON
object a line each way (signal-cli-jsonrpc(5)).

The socket rather than the daemon's HTTP endpoint: signal-cli acknowledges a message to
Signal's servers once its listeners have it, and notices that an HTTP event stream's
client left only at its next write, so a message arriving while the bot restarts is
lost. A socket is read all the time: the daemon sees the bot leave at once and stops
receiving (``--receive-mode=manual``), and what arrives meanwhile waits on Signal's
servers.

Each call is a connection of its own (connect, one request, its answer, close): a call
that could not connect was never made; one cut off after it was written may have been.
The events come on one long connection (``subscribeReceive``). The account, personal
data, goes as every call's ``account`` (:func:`read_account` registers it with the log
redaction; no error text here carries it).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
from anyio.abc import ByteStream
from anyio.streams.buffered import BufferedByteReceiveStream

from thalos_bot.channels.secrets import secret_from_env
from thalos_bot_signal import ACCOUNT_ENV
from thalos_bot_signal.config import NUMBER

USER_ERROR, IO_ERROR, UNTRUSTED, RATE_LIMITED = -1, -3, -4, -5
"""signal-cli's own JSON-RPC error codes (user error, I/O error, untrusted identity,
rate limit)."""
METHOD_NOT_FOUND = -32601
CUT = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)
LINE_MAX = 256 * 1024 * 1024
"""The longest line read (an attachment comes whole, in base64)."""


class RpcError(Exception):
    """The daemon answered a call with a JSON-RPC error."""

    def __init__(self, code: int, data: object = None) -> None:
        super().__init__(f"signal-cli error {code}")  # never its message: it may name people
        self.code = code
        self.data = data

    def retry_after(self) -> float:
        """The longest wait a rate-limit error's per-recipient results ask for (s)."""
        response = self.data.get("response") if isinstance(self.data, dict) else None
        results = response.get("results") if isinstance(response, dict) else None
        waits = [
            float(r["retryAfterSeconds"])
            for r in results or []
            if isinstance(r, dict) and isinstance(r.get("retryAfterSeconds"), int | float)
        ]
        return max(waits, default=0.0)


class DaemonDownError(Exception):
    """The daemon's socket refused the connection: the call was not made."""


class ConnectionLostError(Exception):
    """The connection ended before the answer came: the call may have been carried out."""


FAILED = (RpcError, DaemonDownError, ConnectionLostError, TimeoutError)
"""Every way a call can fail."""


def read_account() -> str:
    what = "the bot's Signal number (as registered or linked with signal-cli)"
    shape = "a number like +4915112345678"
    return secret_from_env(ACCOUNT_ENV, "signal", what, valid=NUMBER.match, shape=shape)


class SignalRpc:
    def __init__(self, url: str, account: str, *, timeout: float) -> None:
        self.account = account
        self._url = urlsplit(url)
        self._timeout = timeout
        self._ids = itertools.count(1)

    async def call(self, method: str, params: Mapping[str, object] | None = None) -> Any:
        """The call's result; raises :class:`RpcError`, :class:`DaemonDownError`,
        :class:`ConnectionLostError` or TimeoutError."""
        async with self._connected() as (stream, lines):
            ident = await self._ask(stream, method, params)
            with anyio.fail_after(self._timeout):
                while True:
                    message = await _next(lines)
                    if message.get("id") == ident:
                        return _result(message)

    async def events(self, opened: Callable[[], None]) -> AsyncIterator[dict[str, Any]]:
        """Each ``receive`` event of the account (``{"envelope": ..., "account": ...}``)
        until the connection ends; ``opened`` once the daemon has taken the
        subscription."""
        async with self._connected() as (stream, lines):
            ident = await self._ask(stream, "subscribeReceive", {})
            while True:
                message = await _next(lines)
                if message.get("id") == ident:
                    _result(message)
                    opened()
                elif message.get("method") == "receive":
                    params = message.get("params")
                    if isinstance(params, dict):
                        result = params.get("result", params)
                        if isinstance(result, dict):
                            yield result

    async def _ask(
        self, stream: ByteStream, method: str, params: Mapping[str, object] | None
    ) -> int:
        ident = next(self._ids)
        request = {
            "jsonrpc": "2.0",
            "method": method,
            "params": {**(params or {}), "account": self.account},
            "id": ident,
        }
        line = json.dumps(request, ensure_ascii=False).encode() + b"\n"
        try:
            await stream.send(line)
        except CUT:
            raise ConnectionLostError from None
        return ident

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[tuple[ByteStream, BufferedByteReceiveStream]]:
        try:
            if self._url.scheme == "unix":
                stream: ByteStream = await anyio.connect_unix(self._url.path)
            else:
                stream = await anyio.connect_tcp(self._url.hostname or "", self._url.port or 0)
        except OSError:
            raise DaemonDownError from None
        async with stream:
            yield stream, BufferedByteReceiveStream(stream)


async def own_uuid(rpc: SignalRpc) -> str:
    """The bot account's UUID (ACI), which group mentions of the bot carry."""
    result = await rpc.call("getUserStatus", {"recipient": [rpc.account]})
    found = result[0].get("uuid") if isinstance(result, list) and result else None
    if not isinstance(found, str) or not found:
        raise RpcError(USER_ERROR)  # no account UUID
    return found


async def _next(lines: BufferedByteReceiveStream) -> dict[str, Any]:
    """The next JSON object the daemon wrote (lines that are not one are skipped)."""
    while True:
        try:
            line = await lines.receive_until(b"\n", LINE_MAX)
        except (*CUT, anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound):
            raise ConnectionLostError from None
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value


def _result(message: dict[str, Any]) -> Any:
    error = message.get("error")
    if isinstance(error, dict):
        raise RpcError(int(error.get("code", 0)), error.get("data"))
    return message.get("result")
