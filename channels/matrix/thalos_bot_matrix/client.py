"""The Matrix client-server API, the calls the channel makes, over one HTTP client.

Plain HTTP rather than a Matrix SDK: the transport must read a refusal exactly as the
homeserver gave it (``M_LIMIT_EXCEEDED`` with its ``retry_after_ms``, which mautrix's
client drops) and choose each transaction id itself (it is kept in the outbox row so a
retry can never show a second copy). Every failure becomes a :class:`MatrixError` or a
:class:`UnreachableError`; no raw HTTP text reaches a person.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx2

from thalos_bot.channels.pacing.waits import header_wait

JSON = dict[str, Any]


def new_txn() -> str:
    """A fresh transaction id (a send made again with the same one stores nothing new)."""
    return f"thalos.{secrets.token_hex(12)}"


class UnreachableError(Exception):
    """The call may not have reached the homeserver, or its answer was lost
    (``maybe_sent``: the homeserver may have acted on it)."""

    def __init__(self, reason: str, *, maybe_sent: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.maybe_sent = maybe_sent


@dataclass(frozen=True, slots=True)
class MatrixError(Exception):
    """The homeserver refused the call: its HTTP status and Matrix error code."""

    status: int
    errcode: str
    retry_after: float | None = None
    """Seconds to wait before the next call, when the homeserver said."""
    session: str | None = None
    """A user-interactive auth session the homeserver opened (a 401 asking for a login)."""

    def __str__(self) -> str:
        return f"{self.status} {self.errcode}"

    @property
    def rate_limited(self) -> bool:
        return self.status == 429 or self.errcode == "M_LIMIT_EXCEEDED"


def refusal_of(answer: httpx2.Response) -> MatrixError:
    """The error a non-2xx answer carries (its body, else its status alone; a 429's wait
    from its body, else from its ``Retry-After``)."""
    try:
        body = answer.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    errcode = body.get("errcode")
    wait = body.get("retry_after_ms")
    if isinstance(wait, int) and not isinstance(wait, bool) and wait >= 0:
        wait /= 1000
    else:
        wait = header_wait(answer.headers) if answer.status_code == 429 else None
    return MatrixError(
        answer.status_code,
        errcode if isinstance(errcode, str) else f"HTTP_{answer.status_code}",
        None if wait is None else max(0.0, wait),
        body.get("session") if isinstance(body.get("session"), str) else None,
    )


def q(part: str) -> str:
    """One path segment, escaped (room ids carry ``!`` and ``:``, event ids ``$``)."""
    return quote(part, safe="")


class MatrixClient:
    """One account's calls. ``token`` may be set later (after a password login)."""

    def __init__(self, homeserver: str, token: str | None, *, timeout: float) -> None:
        self.homeserver = homeserver.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._http = httpx2.AsyncClient(base_url=self.homeserver, timeout=timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def call(
        self,
        method: str,
        path: str,
        *,
        body: JSON | None = None,
        params: dict[str, str] | None = None,
        budget: float | None = None,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> JSON:
        headers = self.auth()
        if content_type is not None:
            headers["Content-Type"] = content_type
        try:
            answer = await self._http.request(
                method,
                path,
                json=body,
                params=params,
                content=content,
                headers=headers,
                timeout=self.timeout if budget is None else budget,
            )
        except httpx2.HTTPError as exc:
            never_left = isinstance(
                exc, httpx2.ConnectError | httpx2.ConnectTimeout | httpx2.PoolTimeout
            )
            raise UnreachableError(type(exc).__name__, maybe_sent=not never_left) from None
        if answer.status_code >= 500:
            # A proxy's 502 or a homeserver's 500: the call may or may not have acted.
            raise UnreachableError(f"HTTP {answer.status_code}")
        if answer.status_code >= 400:
            raise refusal_of(answer)
        try:
            data = answer.json()
        except ValueError:
            raise UnreachableError("an answer that is not JSON") from None
        return data if isinstance(data, dict) else {}

    def auth(self) -> dict[str, str]:
        return {} if self.token is None else {"Authorization": f"Bearer {self.token}"}

    # -- account -----------------------------------------------------------------------

    async def whoami(self) -> JSON:
        return await self.call("GET", "/_matrix/client/v3/account/whoami")

    async def login(
        self, user_id: str, password: str, device_name: str, device_id: str | None
    ) -> JSON:
        body: JSON = {
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": user_id},
            "password": password,
            "initial_device_display_name": device_name,
        }
        if device_id is not None:
            body["device_id"] = device_id
        return await self.call("POST", "/_matrix/client/v3/login", body=body)

    async def displayname(self, user_id: str) -> str | None:
        try:
            data = await self.call("GET", f"/_matrix/client/v3/profile/{q(user_id)}/displayname")
        except MatrixError:
            return None
        name = data.get("displayname")
        return name if isinstance(name, str) and name else None

    # -- sync and rooms ----------------------------------------------------------------

    async def sync(self, since: str | None, timeout_s: float, filter_json: str) -> JSON:
        params = {"timeout": str(math.floor(timeout_s * 1000)), "filter": filter_json}
        if since is not None:
            params["since"] = since
        return await self.call(
            "GET", "/_matrix/client/v3/sync", params=params, budget=timeout_s + self.timeout
        )

    async def join(self, room_id: str) -> JSON:
        return await self.call("POST", f"/_matrix/client/v3/join/{q(room_id)}", body={})

    async def leave(self, room_id: str) -> None:
        await self.call("POST", f"/_matrix/client/v3/rooms/{q(room_id)}/leave", body={})

    async def event(self, room_id: str, event_id: str) -> JSON:
        return await self.call("GET", f"/_matrix/client/v3/rooms/{q(room_id)}/event/{q(event_id)}")

    async def state(self, room_id: str, event_type: str, state_key: str = "") -> JSON | None:
        """The room's current state event's content of that type and key; None when
        the room has none (``M_NOT_FOUND``)."""
        try:
            return await self.call(
                "GET",
                f"/_matrix/client/v3/rooms/{q(room_id)}/state/{q(event_type)}/{q(state_key)}",
            )
        except MatrixError as exc:
            if exc.status == 404:
                return None
            raise

    async def send(self, room_id: str, event_type: str, txn_id: str, content: JSON) -> str:
        """``PUT …/send/{type}/{txnId}``: idempotent for this access token and ``txn_id``
        (a repeat answers the first event's id and stores nothing new)."""
        data = await self.call(
            "PUT",
            f"/_matrix/client/v3/rooms/{q(room_id)}/send/{q(event_type)}/{q(txn_id)}",
            body=content,
        )
        event_id = data.get("event_id")
        if not isinstance(event_id, str):
            raise UnreachableError("a send answered without an event id")
        return event_id

    async def typing(self, room_id: str, user_id: str, *, timeout_ms: int) -> None:
        """Show ``user_id`` typing for ``timeout_ms`` (the bot never ends it early)."""
        body: JSON = {"typing": True, "timeout": timeout_ms}
        await self.call(
            "PUT", f"/_matrix/client/v3/rooms/{q(room_id)}/typing/{q(user_id)}", body=body
        )

    async def upload(self, data: bytes, media_type: str, filename: str) -> str:
        answer = await self.call(
            "POST",
            "/_matrix/media/v3/upload",
            params={"filename": filename},
            content=data,
            content_type=media_type,
        )
        uri = answer.get("content_uri")
        if not isinstance(uri, str):
            raise UnreachableError("an upload answered without a content URI")
        return uri
