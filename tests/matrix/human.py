"""A person on the test Synapse: a plain-HTTP Matrix client (no SDK between the test and
the wire), that creates rooms, sends, reacts, uploads, and reads the room as a client
shows it (each message with its latest ``m.replace`` edit applied).

`until()` long-polls `/sync` (answered early on news) until a predicate over what was
seen holds: no sleeps, bounded by the number of polls.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

import httpx2

from tests.matrix.accounts import Account
from tests.matrix.synapse import SynapseServer

T = TypeVar("T")
JSON = dict[str, Any]
SYNC_WAIT_MS = 5_000
SYNC_ROUNDS = 20
TIMELINE = json.dumps({"room": {"timeline": {"limit": 1000}}})
"""The sync filter: a timeline long enough for a streamed answer's edits. A sync that
still comes back ``limited`` (a gap) is an error, never events silently missed: a
client shows the gap's messages too (Element pages them in)."""


@dataclass(frozen=True)
class Shown:
    """One message as a client shows it: its latest content, and how often it was edited."""

    event_id: str
    sender: str
    content: JSON
    edits: int

    @property
    def body(self) -> str:
        return str(self.content.get("body", ""))


@dataclass
class Human:
    server: SynapseServer
    account: Account
    since: str | None = None
    events: dict[str, list[JSON]] = field(default_factory=dict)
    invites: set[str] = field(default_factory=set)
    _http: httpx2.AsyncClient | None = None

    @property
    def user_id(self) -> str:
        return self.account.user_id

    async def __aenter__(self) -> Self:
        self._http = httpx2.AsyncClient(
            base_url=self.server.base_url,
            timeout=60.0,
            headers={"Authorization": f"Bearer {self.account.access_token}"},
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._http is not None
        await self._http.aclose()

    async def call(self, method: str, path: str, body: JSON | None = None, **kw: Any) -> JSON:
        assert self._http is not None
        answer = await self._http.request(method, path, json=body, **kw)
        if answer.status_code != 200:
            raise AssertionError(f"{method} {path}: {answer.status_code} {answer.text}")
        data: JSON = answer.json()
        return data

    # -- rooms ---------------------------------------------------------------------------

    async def direct_chat(self, other: str, *, encrypted: bool = False) -> str:
        body: JSON = {"preset": "trusted_private_chat", "is_direct": True, "invite": [other]}
        if encrypted:
            body["initial_state"] = [
                {
                    "type": "m.room.encryption",
                    "state_key": "",
                    "content": {"algorithm": "m.megolm.v1.aes-sha2"},
                }
            ]
        room_id: str = (await self.call("POST", "/_matrix/client/v3/createRoom", body))["room_id"]
        return room_id

    async def group(self, invite: list[str]) -> str:
        body: JSON = {"preset": "private_chat", "invite": invite, "name": "a group"}
        room_id: str = (await self.call("POST", "/_matrix/client/v3/createRoom", body))["room_id"]
        return room_id

    async def join(self, room_id: str) -> None:
        await self.call("POST", f"/_matrix/client/v3/join/{room_id}", {})

    async def send(self, room_id: str, content: JSON, event_type: str = "m.room.message") -> str:
        txn = secrets.token_hex(8)
        path = f"/_matrix/client/v3/rooms/{room_id}/send/{event_type}/{txn}"
        event_id: str = (await self.call("PUT", path, content))["event_id"]
        return event_id

    async def say(
        self,
        room_id: str,
        body: str,
        *,
        mentions: list[str] | None = None,
        reply_to: str | None = None,
    ) -> str:
        content: JSON = {"msgtype": "m.text", "body": body}
        if mentions is not None:
            content["m.mentions"] = {"user_ids": mentions}
        if reply_to is not None:
            content["m.relates_to"] = {"m.in_reply_to": {"event_id": reply_to}}
        return await self.send(room_id, content)

    async def react(self, room_id: str, target: str, key: str) -> str:
        content = {"m.relates_to": {"rel_type": "m.annotation", "event_id": target, "key": key}}
        return await self.send(room_id, content, "m.reaction")

    async def upload(self, data: bytes, media_type: str, name: str) -> str:
        assert self._http is not None
        answer = await self._http.post(
            "/_matrix/media/v3/upload",
            params={"filename": name},
            content=data,
            headers={"Content-Type": media_type},
        )
        assert answer.status_code == 200, answer.text
        uri: str = answer.json()["content_uri"]
        return uri

    async def download(self, mxc: str) -> bytes:
        assert self._http is not None
        answer = await self._http.get(f"/_matrix/client/v1/media/download/{mxc[len('mxc://') :]}")
        assert answer.status_code == 200, answer.text
        return answer.content

    # -- what the room shows --------------------------------------------------------------

    async def until(self, found: Callable[[Human], T | None]) -> T:
        for _ in range(SYNC_ROUNDS):
            hit = found(self)
            if hit:
                return hit
            await self.sync_once()
        hit = found(self)
        if hit:
            return hit
        raise AssertionError(f"{self.user_id} never saw the awaited state: {self.events}")

    async def sync_once(self) -> None:
        params = {"timeout": "0" if self.since is None else str(SYNC_WAIT_MS), "filter": TIMELINE}
        if self.since is not None:
            params["since"] = self.since
        self._take(await self.call("GET", "/_matrix/client/v3/sync", params=params))

    def catch_up(self) -> None:
        """A /sync that does not wait, made blocking: for a caller that cannot await
        (the contract suite's ``shown()``), so that what it reads is the room as it is."""
        params = {"timeout": "0", "filter": TIMELINE}
        if self.since is not None:
            params["since"] = self.since
        with httpx2.Client(base_url=self.server.base_url, timeout=30.0) as http:
            answer = http.get(
                "/_matrix/client/v3/sync",
                params=params,
                headers={"Authorization": f"Bearer {self.account.access_token}"},
            )
        assert answer.status_code == 200, answer.text
        self._take(answer.json())

    def _take(self, data: JSON) -> None:
        self.since = data["next_batch"]
        rooms = data.get("rooms", {})
        self.invites |= set(rooms.get("invite", {}))
        for room_id, room in rooms.get("join", {}).items():
            timeline = room.get("timeline", {})
            if timeline.get("limited") and room_id in self.events:
                raise AssertionError(f"{self.user_id}: a gap in {room_id}'s timeline")
            self.events.setdefault(room_id, []).extend(timeline.get("events", []))

    def shown(self, room_id: str, sender: str | None = None) -> list[Shown]:
        """Messages in the room (by ``sender``), oldest first, each with its edits applied."""
        events = self.events.get(room_id, [])
        edits: dict[str, list[JSON]] = {}
        for event in events:
            relates = event.get("content", {}).get("m.relates_to", {})
            if event["type"] == "m.room.message" and relates.get("rel_type") == "m.replace":
                edits.setdefault(relates["event_id"], []).append(event)
        shown = []
        for event in events:
            content = event.get("content", {})
            if event["type"] != "m.room.message" or "body" not in content:
                continue
            if content.get("m.relates_to", {}).get("rel_type") == "m.replace":
                continue
            if sender is not None and event["sender"] != sender:
                continue
            later = edits.get(event["event_id"], [])
            latest = later[-1]["content"]["m.new_content"] if later else content
            shown.append(Shown(event["event_id"], event["sender"], latest, len(later)))
        return shown

    def bodies(self, room_id: str, sender: str) -> list[str]:
        return [message.body for message in self.shown(room_id, sender)]

    def joined(self, room_id: str, user_id: str) -> bool:
        return any(
            e["type"] == "m.room.member"
            and e.get("state_key") == user_id
            and e["content"].get("membership") == "join"
            for e in self.events.get(room_id, [])
        )

    def events_of(self, room_id: str, sender: str, event_type: str) -> list[JSON]:
        return [
            e
            for e in self.events.get(room_id, [])
            if e["sender"] == sender and e["type"] == event_type
        ]
