"""Real Matrix clients (mautrix, the library issue 23 names) for accounts on the test server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mautrix.api import HTTPAPI, Method, Path
from mautrix.client import ClientAPI
from mautrix.types import DeviceID, SyncToken, UserID

from tests.matrix.accounts import Account
from tests.matrix.synapse import SynapseServer

# One /sync long-poll waits this long for news; Synapse answers as soon as there is some.
SYNC_WAIT_MS = 10_000
# Long-polls to make before giving up on an awaited event (each ends early on news).
SYNC_ROUNDS = 12


@asynccontextmanager
async def matrix_client(server: SynapseServer, account: Account) -> AsyncIterator[ClientAPI]:
    api = HTTPAPI(server.base_url, account.access_token)
    try:
        yield ClientAPI(UserID(account.user_id), DeviceID(account.device_id), api=api)
    finally:
        await api.session.close()


class Syncer:
    """One client's /sync position: `until()` long-polls until a predicate holds."""

    def __init__(self, client: ClientAPI) -> None:
        self.client = client
        self.since: SyncToken | None = None

    async def until(self, found: Callable[[dict[str, Any]], Any]) -> Any:
        """Sync until `found(response)` gives something truthy, and return that."""
        for _ in range(SYNC_ROUNDS):
            response: dict[str, Any] = await self.client.sync(
                since=self.since, timeout=0 if self.since is None else SYNC_WAIT_MS
            )
            self.since = SyncToken(response["next_batch"])
            hit = found(response)
            if hit:
                return hit
        raise AssertionError(f"{self.client.mxid} never saw the awaited sync data")


def timeline(response: dict[str, Any], room_id: str) -> list[dict[str, Any]]:
    joined = response.get("rooms", {}).get("join", {}).get(room_id, {})
    events: list[dict[str, Any]] = joined.get("timeline", {}).get("events", [])
    return events


def invited_to(response: dict[str, Any], room_id: str) -> bool:
    return room_id in response.get("rooms", {}).get("invite", {})


async def room_bodies(server: SynapseServer, account: Account, room_id: str) -> list[str]:
    """Every m.room.message body in the room, oldest first, as `account` reads it."""
    async with matrix_client(server, account) as client:
        page: dict[str, Any] = await client.api.request(
            Method.GET, Path.v3.rooms[room_id].messages, query_params={"dir": "b", "limit": "100"}
        )
    bodies = [
        str(event["content"]["body"])
        for event in page["chunk"]
        if event["type"] == "m.room.message" and "body" in event["content"]
    ]
    return bodies[::-1]
