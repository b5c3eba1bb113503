"""What Synapse does under its rate limiter (rc_message), shown on a real server.

The answer the Matrix transport must obey: HTTP 429, `M_LIMIT_EXCEEDED`, `retry_after_ms`
in the body and `Retry-After` (whole seconds, rounded up) in the headers. A send refused
so stores nothing under its transaction id: the same PUT, once the limit allows, is a
fresh send that lands once. mautrix raises `MLimitExceeded` for it but keeps neither the
body's `retry_after_ms` nor the header, so the transport must read them itself.
"""

from __future__ import annotations

import math
from typing import Any

import httpx2
import pytest
from mautrix.errors import MLimitExceeded
from mautrix.types import EventType, MessageType, RoomCreatePreset, TextMessageEventContent

from tests.matrix.accounts import Account, register, unique
from tests.matrix.clients import matrix_client, room_bodies
from tests.matrix.synapse import SynapseServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _put_message(
    http: httpx2.AsyncClient, account: Account, room_id: str, txn_id: str, body: str
) -> httpx2.Response:
    return await http.put(
        f"/_matrix/client/v3/rooms/{room_id}/send/m.room.message/{txn_id}",
        headers={"Authorization": f"Bearer {account.access_token}"},
        json={"msgtype": "m.text", "body": body},
    )


async def test_a_flood_gets_m_limit_exceeded_and_a_refused_txn_is_not_remembered(
    flood_synapse: SynapseServer,
) -> None:
    server = flood_synapse
    admin = await register(server, unique("admin"), admin=True)
    human = await register(server, unique("human"))
    async with matrix_client(server, human) as client:
        room_id = await client.create_room(preset=RoomCreatePreset.PRIVATE)
    sent: list[str] = []
    refused: httpx2.Response | None = None
    async with httpx2.AsyncClient(base_url=server.base_url, timeout=30.0) as http:
        for n in range(10):
            answer = await _put_message(http, human, room_id, f"m{n}", f"message {n}")
            if answer.status_code != 200:
                refused = answer
                break
            sent.append(f"message {n}")
        assert refused is not None, "ten messages passed a limit of a burst of 3"
        assert sent, "the first message after creating the room was already refused"
        assert refused.status_code == 429
        data: dict[str, Any] = refused.json()
        assert set(data) == {"errcode", "error", "retry_after_ms"}
        assert data["errcode"] == "M_LIMIT_EXCEEDED"
        assert data["error"] == "Too Many Requests"
        retry_after_ms = data["retry_after_ms"]
        assert isinstance(retry_after_ms, int)
        assert 0 < retry_after_ms <= 1_000_000  # one action per 1000 s
        assert refused.headers["retry-after"] == str(math.ceil(retry_after_ms / 1000))
        refused_txn = f"m{len(sent)}"

        # mautrix turns the same answer into MLimitExceeded.
        async with matrix_client(server, human) as client:
            with pytest.raises(MLimitExceeded) as raised:
                await client.send_message_event(
                    room_id,
                    EventType.ROOM_MESSAGE,
                    TextMessageEventContent(msgtype=MessageType.TEXT, body="via mautrix"),
                )
        assert raised.value.http_status == 429
        assert raised.value.errcode == "M_LIMIT_EXCEEDED"

        # Lift the limit for this user (admin API; 0 means unlimited) and retry the refused
        # transaction id: it lands now, once, however often it is retried.
        lifted = await http.post(
            f"/_synapse/admin/v1/users/{human.user_id}/override_ratelimit",
            headers={"Authorization": f"Bearer {admin.access_token}"},
            json={"messages_per_second": 0, "burst_count": 0},
        )
        assert lifted.status_code == 200
        body = f"message {len(sent)}"
        first = await _put_message(http, human, room_id, refused_txn, body)
        second = await _put_message(http, human, room_id, refused_txn, body)
    assert first.status_code == second.status_code == 200
    assert first.json()["event_id"] == second.json()["event_id"]
    assert await room_bodies(server, human, room_id) == [*sent, body]


async def test_the_shared_server_does_not_pace_a_burst(synapse: SynapseServer) -> None:
    """Its limits are relaxed (1000/s), so no other test waits on pacing by accident."""
    human = await register(synapse, unique("human"))
    async with matrix_client(synapse, human) as client:
        room_id = await client.create_room(preset=RoomCreatePreset.PRIVATE)
    async with httpx2.AsyncClient(base_url=synapse.base_url, timeout=30.0) as http:
        codes = [
            (await _put_message(http, human, room_id, f"b{n}", f"burst {n}")).status_code
            for n in range(30)
        ]
    assert codes == [200] * 30
