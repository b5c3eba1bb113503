"""How the send-only side (replicas) seals an event for an encrypted room, or refuses to.

An encrypted room's events are sealed with the device's Olm and Megolm state, which only
the sync's owner holds and writes (fenced by the connection lease's token,
:mod:`.crypto_shared`): its messages are owner-only, and the send-only side encrypts
with the keys of the sync connection open in the same process (:class:`Sealing`, one
per account). Where none is open, a room the homeserver says is encrypted is refused
(:class:`~.wire.SealedElsewhereError`): nothing is ever sent in plaintext there.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from time import monotonic

import structlog

from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.wire import Seal, Sealed, SealedElsewhereError

log = structlog.get_logger(__name__)

RECHECK = 5.0
"""Seconds a room the homeserver said is not encrypted is believed so (a room once
encrypted stays so)."""
ENCRYPTION = "m.room.encryption"


@dataclass
class Sealing:
    """The sync connection open in this process, as the send-only side encrypts: its
    seal (None: encryption could not start) and which rooms its state knows are
    encrypted (None: the connection is not open here)."""

    seal: Seal | None = None
    sealed: Sealed | None = None

    @contextmanager
    def held(self, seal: Seal | None, sealed: Sealed) -> Iterator[None]:
        """While the connection is open here (given up before its keys close)."""
        self.seal, self.sealed = seal, sealed
        try:
            yield
        finally:
            self.seal, self.sealed = None, None


class EncryptedRooms:
    """Whether a room is encrypted, as its state on the homeserver says (remembered:
    for good once encrypted, :data:`RECHECK` seconds when not)."""

    def __init__(self, client: MatrixClient) -> None:
        self._client = client
        self._encrypted: set[str] = set()
        self._plain: dict[str, float] = {}

    async def __call__(self, room_id: str) -> bool:
        if room_id in self._encrypted:
            return True
        if monotonic() < self._plain.get(room_id, 0.0):
            return False
        try:
            found = await self._client.state(room_id, ENCRYPTION)
        except UnreachableError as exc:
            raise UnreachableError(exc.reason, maybe_sent=False) from None
        except MatrixError as exc:
            if exc.status != 403 or exc.rate_limited:
                # Not known (a 429, any other refusal): the send is not made now, and
                # made again later; never in plaintext on a guess.
                raise UnreachableError(f"room state: {exc}", maybe_sent=False) from None
            # Not in the room (403): the send itself is refused, in plaintext or not.
            log.info("matrix_room_state_unknown", room=room_id, error=str(exc))
            return False
        if found is not None:
            self._encrypted.add(room_id)
            return True
        self._plain[room_id] = monotonic() + RECHECK
        return False


def sealing_of(sealing: Sealing, rooms: EncryptedRooms) -> tuple[Seal, Sealed]:
    """The send-only side's seal and test: the connection's own while it is open in
    this process; else a room the homeserver says is encrypted is refused."""

    async def seal(room_id: str, kind: str, content: JSON) -> tuple[str, JSON]:
        if sealing.seal is not None:
            return await sealing.seal(room_id, kind, content)
        # Not open here, or its encryption could not start: asked as elsewhere.
        if await rooms(room_id):
            log.warning("matrix_sealed_room_elsewhere", room=room_id)
            raise SealedElsewhereError(room_id)
        return kind, content

    async def sealed(room_id: str) -> bool:
        if sealing.sealed is not None:
            return await sealing.sealed(room_id)
        return await rooms(room_id)

    return seal, sealed


_sealings: dict[str, Sealing] = {}


def sealing(user_id: str) -> Sealing:
    """By account: the sync connection open in this process, for its send-only side."""
    return _sealings.setdefault(user_id, Sealing())
