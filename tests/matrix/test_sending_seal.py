"""The send-only side's seal on replicas (:mod:`thalos_bot_matrix.sealing`): with the
sync connection open in the same process its keys encrypt; without it, a room the
homeserver says is encrypted is refused (never sent in plaintext), a plain room is
sent as it is, and the homeserver is asked once per room (again after a while for a
plain one)."""

from __future__ import annotations

from typing import Any

import pytest

from thalos_bot.channels.delivery.failure import Failure
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.sealing import EncryptedRooms, SealedElsewhereError, Sealing, sealing_of
from thalos_bot_matrix.wire import MatrixWire

pytestmark = pytest.mark.anyio

SEALED, PLAIN, AWAY = "!sealed:x", "!plain:x", "!away:x"


class States(MatrixClient):
    """The homeserver's ``m.room.encryption`` state of each room, counted."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9", None, timeout=1)
        self.asked: list[str] = []
        self.down = False
        self.limited = False

    async def state(self, room_id: str, event_type: str, state_key: str = "") -> JSON | None:
        self.asked.append(room_id)
        if self.down:
            raise UnreachableError("ConnectError", maybe_sent=True)
        if self.limited:
            raise MatrixError(429, "M_LIMIT_EXCEEDED", retry_after=0.5)
        if room_id == AWAY:
            raise MatrixError(403, "M_FORBIDDEN")
        return {"algorithm": "m.megolm.v1.aes-sha2"} if room_id == SEALED else None


async def connection_seal(room: str, kind: str, content: JSON) -> tuple[str, JSON]:
    return "m.room.encrypted", {"sealed": content}


async def connection_knows(room: str) -> bool:
    return room == SEALED


async def test_elsewhere_an_encrypted_room_is_refused_and_a_plain_one_sent_as_it_is() -> None:
    client = States()
    seal, sealed = sealing_of(Sealing(), EncryptedRooms(client))
    content: dict[str, Any] = {"body": "hi"}
    with pytest.raises(SealedElsewhereError):
        await seal(SEALED, "m.room.message", content)
    assert await seal(PLAIN, "m.room.message", content) == ("m.room.message", content)
    assert await sealed(SEALED)
    assert not await sealed(PLAIN)
    assert client.asked == [SEALED, PLAIN]  # each remembered
    wire = MatrixWire(client, "@bot:x", room_min_interval=0.0)
    classified = wire.classify(SealedElsewhereError(SEALED))
    assert classified is not None
    assert classified.failure is Failure.REJECTED
    await client.aclose()


async def test_with_the_sync_open_here_its_keys_seal() -> None:
    client = States()
    sealing = Sealing()
    seal, sealed = sealing_of(sealing, EncryptedRooms(client))
    with sealing.held(connection_seal, connection_knows):
        assert await seal(SEALED, "m.room.message", {"body": "hi"}) == (
            "m.room.encrypted",
            {"sealed": {"body": "hi"}},
        )
        assert await sealed(SEALED)
    assert client.asked == []
    with pytest.raises(SealedElsewhereError):  # the connection closed: refused again
        await seal(SEALED, "m.room.message", {"body": "hi"})
    with sealing.held(None, connection_knows):  # encryption could not start there
        assert await seal(PLAIN, "m.room.message", {}) == ("m.room.message", {})
        with pytest.raises(SealedElsewhereError):  # never plaintext into a sealed room
            await seal(SEALED, "m.room.message", {"body": "hi"})
    await client.aclose()


async def test_a_homeserver_out_of_reach_is_a_send_not_made_and_a_room_not_joined_plain() -> None:
    client = States()
    rooms = EncryptedRooms(client)
    client.down = True
    with pytest.raises(UnreachableError) as raised:
        await rooms(SEALED)
    assert raised.value.maybe_sent is False  # made again later, never in plaintext
    client.down = False
    assert not await rooms(AWAY)  # the send itself is refused there
    await client.aclose()


async def test_a_rate_limited_look_at_the_room_is_a_send_not_made_and_not_remembered() -> None:
    """A 429 on the room's state says nothing of its encryption: the send waits and is
    made again (the room asked again then), never in plaintext on a guess."""
    client = States()
    seal, _ = sealing_of(Sealing(), EncryptedRooms(client))
    client.limited = True
    for _ in range(2):
        with pytest.raises(UnreachableError) as raised:
            await seal(SEALED, "m.room.message", {"body": "secret"})
        assert raised.value.maybe_sent is False
    client.limited = False
    with pytest.raises(SealedElsewhereError):
        await seal(SEALED, "m.room.message", {"body": "secret"})
    assert client.asked == [SEALED, SEALED, SEALED]
    await client.aclose()
