"""How an event for an encrypted room is sealed, or refused; and how the sync side reads
one.

An encrypted room's events are sealed with the device's Olm and Megolm state, which only
the sync's owner holds and writes (fenced by the connection lease's token,
:mod:`.crypto_shared`): its messages are owner-only (:func:`marked`), and the send-only
side (replicas) encrypts with the keys of the sync connection open in the same process
(:class:`Sealing`, one per account). Where none is open, a room the homeserver says is
encrypted is refused (:class:`SealedElsewhereError`): nothing is ever sent in plaintext
there. With encryption off, the sync side never answers an encrypted room in plaintext
either: it tells the room once that the bot cannot read it (:func:`opened`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from time import monotonic
from typing import TYPE_CHECKING

import structlog

from thalos_bot.channels.ports import InboundMessage
from thalos_bot.channels.registry import ChannelHost
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.session import Identity
from thalos_bot_matrix.state import SyncState

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto

log = structlog.get_logger(__name__)

Seal = Callable[[str, str, JSON], Awaitable[tuple[str, JSON]]]
"""An event's type and content as they go to a room (encrypted in an encrypted room)."""
Sealed = Callable[[str], Awaitable[bool]]
"""Whether a room is encrypted."""


class SealedElsewhereError(Exception):
    """An encrypted room, whose keys another replica's sync connection holds."""


RECHECK = 5.0
"""Seconds a room the homeserver said is not encrypted is believed so (a room once
encrypted stays so)."""
ENCRYPTION = "m.room.encryption"
ENCRYPTED = (
    "This room is end-to-end encrypted, and this bot cannot read or write encrypted "
    "messages (encryption is off, or could not be set up, in its Matrix channel). It will not "
    "answer here. Start a direct chat with encryption turned off to talk to it."
)


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


@asynccontextmanager
async def seals(
    client: MatrixClient,
    config: MatrixConfig,
    host: ChannelHost,
    identity: Identity,
    state: SyncState | None,
) -> AsyncIterator[tuple[Crypto | None, Seal | None, Sealed | None]]:
    """The device's keys (None: encryption off, or not started) and the wire's seal and
    test. With the sync (its ``state``) and ``encryption`` on, the keys are started here
    (closed on exit) and their seal is held for this process's send-only sides; a
    send-only side (no ``state``) seals with them (:func:`sealing_of`)."""
    if state is None:
        rooms = sealing_of(sealing(config.user_id), EncryptedRooms(client))
        yield (None, *rooms) if config.encryption else (None, None, None)
        return
    crypto: Crypto | None = None
    seal: Seal | None = None
    try:
        if config.encryption:
            # Here, not at the top: mautrix's crypto (and aiohttp) load only when used.
            from thalos_bot_matrix import encryption

            crypto = await encryption.started(client, config, host, identity)
            seal = None if crypto is None else encryption.sealer(crypto, state)

        async def known(room_id: str) -> bool:
            return room_id in state.encrypted

        with sealing(config.user_id).held(seal, known):
            yield crypto, seal, known
    finally:
        if crypto is not None:
            crypto.store.close()


def readable(crypto: Crypto | None, room_id: str, event: JSON) -> JSON:
    """``event``, decrypted when it is encrypted and its key is here."""
    if crypto is not None and event.get("type") == "m.room.encrypted":
        return crypto.decrypt(room_id, event) or event
    return event


async def synced(crypto: Crypto | None, batch: JSON) -> list[tuple[str, JSON]]:
    """With encryption on, a batch's to-device events taken before its timeline
    (:func:`.encryption.synced`): the events waiting whose key just came."""
    if crypto is None:
        return []
    from thalos_bot_matrix import encryption  # loaded with encryption on only

    return await encryption.synced(crypto, batch)


async def opened(
    crypto: Crypto | None,
    state: SyncState,
    room_id: str,
    event: JSON,
    *,
    allowed: bool,
    notify: Callable[[str, str], None],
) -> JSON | None:
    """A timeline event as the daemon reads it, None when it is not for it: with
    encryption on, see :func:`.encryption.opened`; off, an encrypted event, or a message
    in a room known encrypted, is never answered (``allowed`` sender: the room is told
    why, once)."""
    sealed = room_id in state.encrypted
    if crypto is not None:
        from thalos_bot_matrix import encryption  # loaded with encryption on only

        return await encryption.opened(crypto, room_id, event, sealed, allowed=allowed)
    kind = event.get("type")
    if kind == "m.room.encrypted" or (sealed and kind == "m.room.message"):
        if allowed:
            told(state, notify, room_id)
        return None
    return event


def told(state: SyncState, notify: Callable[[str, str], None], room_id: str) -> None:
    """Encryption off: an encrypted room is told once that the bot cannot answer there."""
    if room_id not in state.told:
        state.told.add(room_id)
        log.warning("matrix_encrypted_room_refused", room=room_id)
        notify(room_id, ENCRYPTED)


def marked(crypto: Crypto | None, state: SyncState, message: InboundMessage) -> InboundMessage:
    """On replicas only the sync's owner holds the device's keys: a message from an
    encrypted room is answered by it (owner-only, see
    :mod:`thalos_bot.cluster.seen_lanes`)."""
    if crypto is not None and message.conversation_id in state.encrypted:
        return replace(message, owner_only=True)
    return message
