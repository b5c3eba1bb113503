"""signal-cli's daemon over HTTP: JSON-RPC requests to ``POST /api/v1/rpc`` and the
server-sent events of ``GET /api/v1/events`` (signal-cli-jsonrpc(5)).

Why HTTP rather than the daemon's TCP or Unix socket: each call is a request of its own,
so a daemon restart fails only the calls in flight, and each failure says whether the
call can have been carried out (refused before it was sent, or cut off after); the
socket is one stream for every call and every event, where a drop loses all of them at
once and the answers have to be matched to the calls by hand. The event stream
reconnects by asking again, and ``/api/v1/check`` says the daemon is up.

The account travels as the ``account`` parameter of every call (the daemon serves
several accounts when started without ``-a``; with one account it ignores it) and of
the event stream. It is personal data: :func:`read_account` registers it with the log
redaction, and no error text here carries it.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx

from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.telemetry.redact import register_secret
from thalos_bot_signal import ACCOUNT_ENV
from thalos_bot_signal.config import NUMBER

EXIT_SIGNAL_CONFIG = 2
USER_ERROR, IO_ERROR, UNTRUSTED, RATE_LIMITED = -1, -3, -4, -5
"""signal-cli's own JSON-RPC error codes (user error, I/O error, untrusted identity,
rate limit)."""
METHOD_NOT_FOUND, INVALID_PARAMS = -32601, -32602


class RpcError(Exception):
    """The daemon answered a call with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(f"signal-cli error {code}")
        self.code = code
        self.message = message
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


class HttpStatusError(Exception):
    """The endpoint answered with an HTTP error (a proxy in front, a wrong URL)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def read_account() -> str:
    account = os.environ.get(ACCOUNT_ENV, "").strip()
    if not NUMBER.match(account):
        said = "is not set" if not account else "is not a number like +4915112345678"
        raise ChannelFatalError(
            f"channels.signal: {ACCOUNT_ENV} {said}; put the bot's Signal number (as "
            "registered or linked with signal-cli) in the environment (or the systemd "
            "EnvironmentFile=)",
            EXIT_SIGNAL_CONFIG,
        )
    register_secret(account)
    return account


class SignalRpc:
    def __init__(self, base_url: str, account: str, *, timeout: float) -> None:
        self.account = account
        self._ids = itertools.count(1)
        self._http = httpx.AsyncClient(
            base_url=base_url, timeout=httpx.Timeout(timeout, connect=10.0)
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(self, method: str, params: Mapping[str, object] | None = None) -> Any:
        """The call's result; raises :class:`RpcError`, :class:`HttpStatusError` or
        httpx's transport errors."""
        request = {
            "jsonrpc": "2.0",
            "method": method,
            "params": {**(params or {}), "account": self.account},
            "id": next(self._ids),
        }
        response = await self._http.post("/api/v1/rpc", json=request)
        if response.status_code != 200:
            raise HttpStatusError(response.status_code)
        body = response.json()
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict):
            code, message = int(error.get("code", 0)), str(error.get("message", ""))
            raise RpcError(code, message, error.get("data"))
        return body.get("result") if isinstance(body, dict) else None

    async def check(self) -> bool:
        """Is the daemon up (``/api/v1/check``)?"""
        response = await self._http.get("/api/v1/check")
        return response.status_code == 200

    async def events(self, opened: Callable[[], None]) -> AsyncIterator[dict[str, Any]]:
        """The ``receive`` events of the account, each one's JSON, until the stream
        ends (the daemon stopped) or fails (httpx's errors); ``opened`` is called once
        the daemon has accepted the stream."""
        timeout = httpx.Timeout(None, connect=10.0)  # keep-alives come every 15 s
        params = {"account": self.account}
        async with self._http.stream(
            "GET", "/api/v1/events", params=params, timeout=timeout
        ) as response:
            if response.status_code != 200:
                raise HttpStatusError(response.status_code)
            opened()
            kind, data = "", []
            async for line in response.aiter_lines():
                if line.startswith(":"):
                    continue  # a keep-alive
                if line:
                    field, _, value = line.partition(":")
                    if field == "event":
                        kind = value.strip()
                    elif field == "data":
                        data.append(value.removeprefix(" "))
                    continue
                if kind in {"", "receive"} and data:
                    event = _parsed("\n".join(data))
                    if event is not None:
                        yield event
                kind, data = "", []


async def own_uuid(rpc: SignalRpc) -> str:
    """The bot account's UUID (ACI), which group mentions of the bot carry."""
    result = await rpc.call("getUserStatus", {"recipient": [rpc.account]})
    found = result[0].get("uuid") if isinstance(result, list) and result else None
    if not isinstance(found, str) or not found:
        raise RpcError(USER_ERROR, "no account UUID")
    return found


def _parsed(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
