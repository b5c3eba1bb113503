"""The real Synapse harness over the real client-server protocol, with mautrix clients.

These are the server's facts the Matrix transport will build on: invites and joins, a
message seen through /sync, the transaction-id idempotency of `PUT /send/.../{txnId}`
(the exactly-once fact), and `m.replace` edits.
"""

from __future__ import annotations

import pathlib
from typing import Any

import httpx2
import pytest
from mautrix.api import Method, Path
from mautrix.types import (
    EventID,
    EventType,
    MessageType,
    RoomCreatePreset,
    TextMessageEventContent,
    UserID,
)

from tests.matrix.accounts import Account, register, registration_mac, unique
from tests.matrix.clients import Syncer, invited_to, matrix_client, room_bodies, timeline
from tests.matrix.synapse import SynapseServer, SynapseStartError

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def text(body: str) -> TextMessageEventContent:
    return TextMessageEventContent(msgtype=MessageType.TEXT, body=body)


async def test_registration_gives_a_working_token_and_device(synapse: SynapseServer) -> None:
    account = await register(synapse, unique("human"), displayname="A Human")
    async with matrix_client(synapse, account) as client:
        who = await client.whoami()
        profile = await client.get_profile(UserID(account.user_id))
    assert who.user_id == account.user_id == f"@{account.user_id[1:].split(':')[0]}:localhost"
    assert who.device_id == account.device_id
    assert profile.displayname == "A Human"


async def test_registration_with_a_wrong_mac_is_refused(synapse: SynapseServer) -> None:
    url = f"{synapse.base_url}/_synapse/admin/v1/register"
    async with httpx2.AsyncClient() as http:
        nonce = (await http.get(url)).json()["nonce"]
        wrong = registration_mac("not-the-secret", nonce, "mallory", "pw", admin=True)
        answer = await http.post(
            url,
            json={
                "nonce": nonce,
                "username": "mallory",
                "password": "pw",
                "admin": True,
                "mac": wrong,
            },
        )
    assert answer.status_code == 403
    assert answer.json() == {"errcode": "M_UNKNOWN", "error": "HMAC incorrect"}


async def test_invite_join_message_reply_idempotent_txn_and_edit(synapse: SynapseServer) -> None:
    bot = await register(synapse, unique("bot"))
    human = await register(synapse, unique("human"))
    async with matrix_client(synapse, bot) as bot_client, matrix_client(synapse, human) as user:
        bot_sync = Syncer(bot_client)
        await bot_sync.until(lambda _: True)  # the initial sync: a position to wait from

        room_id = await user.create_room(
            preset=RoomCreatePreset.PRIVATE, is_direct=True, invitees=[UserID(bot.user_id)]
        )
        await bot_sync.until(lambda r: invited_to(r, room_id))
        assert await bot_client.join_room_by_id(room_id) == room_id

        asked = await user.send_message_event(room_id, EventType.ROOM_MESSAGE, text("hello bot"))
        seen = await bot_sync.until(
            lambda r: [e for e in timeline(r, room_id) if e["event_id"] == asked]
        )
        assert seen[0]["sender"] == human.user_id
        assert seen[0]["content"] == {"msgtype": "m.text", "body": "hello bot"}

        # The reply, under a transaction id the sender chose; the same PUT again (as after
        # a timeout or a restart) answers with the same event and stores nothing new, even
        # when the retried body differs.
        reply = await bot_client.send_message_event(
            room_id, EventType.ROOM_MESSAGE, text("hello human"), txn_id="outbox-1"
        )
        again = await bot_client.send_message_event(
            room_id, EventType.ROOM_MESSAGE, text("hello human"), txn_id="outbox-1"
        )
        changed = await bot_client.send_message_event(
            room_id, EventType.ROOM_MESSAGE, text("a different body"), txn_id="outbox-1"
        )
        assert again == reply
        assert changed == reply
        assert await room_bodies(synapse, human, room_id) == ["hello bot", "hello human"]

        # An edit: m.replace relation; the server bundles it with the original.
        edit = text("hello again")
        edit.set_edit(reply)
        assert edit.serialize() == {
            "msgtype": "m.text",
            "body": "* hello again",  # mautrix adds the fallback for clients without edits
            "m.new_content": {"msgtype": "m.text", "body": "hello again"},
            "m.relates_to": {"rel_type": "m.replace", "event_id": reply},
        }
        edit_id = await bot_client.send_message_event(
            room_id, EventType.ROOM_MESSAGE, edit, txn_id="outbox-1-edit-1"
        )
        original: dict[str, Any] = await user.api.request(
            Method.GET, Path.v3.rooms[room_id].event[reply]
        )
        assert original["content"]["body"] == "hello human"  # the original stays as sent
        bundled = original["unsigned"]["m.relations"]["m.replace"]
        assert bundled["event_id"] == edit_id
        assert bundled["content"]["m.new_content"]["body"] == "hello again"
        relations: dict[str, Any] = await user.api.request(
            Method.GET, Path.v1.rooms[room_id].relations[reply]["m.replace"]
        )
        assert [e["event_id"] for e in relations["chunk"]] == [edit_id]


async def _login(server: SynapseServer, account: Account, device_id: str | None) -> str:
    body: dict[str, Any] = {
        "type": "m.login.password",
        "identifier": {"type": "m.id.user", "user": account.user_id},
        "password": account.password,
    }
    if device_id is not None:
        body["device_id"] = device_id
    async with httpx2.AsyncClient() as http:
        answer = await http.post(f"{server.base_url}/_matrix/client/v3/login", json=body)
    answer.raise_for_status()
    token: str = answer.json()["access_token"]
    return token


async def test_transaction_ids_are_scoped_to_the_device(synapse: SynapseServer) -> None:
    """A new token for the same device keeps the txn memory; another device does not."""
    bot = await register(synapse, unique("bot"))
    async with matrix_client(synapse, bot) as bot_client:
        room_id = await bot_client.create_room(preset=RoomCreatePreset.PRIVATE)
        first = await bot_client.send_message_event(
            room_id, EventType.ROOM_MESSAGE, text("once"), txn_id="t-1"
        )
    same_device = Account(
        bot.user_id, await _login(synapse, bot, bot.device_id), bot.device_id, bot.password
    )
    assert same_device.access_token != bot.access_token
    async with matrix_client(synapse, same_device) as client:
        assert (
            await client.send_message_event(
                room_id, EventType.ROOM_MESSAGE, text("once"), txn_id="t-1"
            )
            == first
        )
    other = Account(bot.user_id, await _login(synapse, bot, None), "", bot.password)
    async with matrix_client(synapse, other) as client:
        second: EventID = await client.send_message_event(
            room_id, EventType.ROOM_MESSAGE, text("once"), txn_id="t-1"
        )
    assert second != first
    assert await room_bodies(synapse, bot, room_id) == ["once", "once"]


def test_a_server_that_cannot_start_fails_with_its_log(
    synapse: SynapseServer, tmp_path: pathlib.Path
) -> None:
    """Start-up failures carry Synapse's own words (here: its port is already taken)."""
    clash = SynapseServer(tmp_path, port=synapse.port)
    try:
        with pytest.raises(SynapseStartError) as raised:
            clash.start()
    finally:
        clash.stop()
    message = str(raised.value)
    assert message.startswith("Synapse exited with code 1 before it was healthy")
    assert "--- homeserver.log" in message
    assert "Address already in use" in message
