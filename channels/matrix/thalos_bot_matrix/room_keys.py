"""Which room keys enter the store (see :mod:`.crypto`, Receiving): an ``m.room_key``
from a device of its sender, a member of that room, for a room the bot is in; an
``m.forwarded_room_key`` only when the bot asked for it (:mod:`.key_asks`). A refused
key is logged at debug level only: anyone can send these, and a flood must fill neither
the store nor the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog
from olm.group_session import InboundGroupSession, OlmGroupSessionError

from thalos_bot_matrix import key_asks, key_requests
from thalos_bot_matrix.backup import Pending
from thalos_bot_matrix.client import JSON, MatrixError, UnreachableError, q

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto

log = structlog.get_logger(__name__)

MEGOLM = "m.megolm.v1.aes-sha2"


async def room_key(
    crypto: Crypto, sender: str, device_keys: tuple[str, object], content: object
) -> None:
    if not isinstance(content, dict) or content.get("algorithm") != MEGOLM:
        return
    room_id, session_id = content.get("room_id"), content.get("session_id")
    session_key = content.get("session_key")
    if not isinstance(room_id, str) or not isinstance(session_key, str):
        return
    await keep(crypto, sender, device_keys, room_id, session_id, session_key, exported=False)


async def forwarded_key(crypto: Crypto, sender: str, sender_key: str, payload: JSON) -> None:
    """An ``m.forwarded_room_key`` answering one of the bot's requests (see
    :mod:`.key_asks`): from the session's maker, or from the bot's own device that
    its self-signing key signed (then the key is the original sender's)."""
    content = payload.get("content")
    found = key_asks.forwarded_from(crypto, sender, sender_key, content)
    if found is None or not isinstance(content, dict):
        return
    room_id, session_id, original_key, claimed = found
    origin = sender
    if sender_key != original_key:  # relayed by one of the bot's own devices
        device_id = payload.get("sender_device")
        own = None
        try:
            if isinstance(device_id, str):
                own = await key_requests.verified_own_device(crypto, device_id)
        except (MatrixError, UnreachableError):
            own = None
        if own is None or own.curve25519 != sender_key:
            log.debug("matrix_forwarded_key_refused", sender=sender, reason="not verified")
            return
        origin = crypto.asks.asked[f"{room_id}|{session_id}"].sender
    session_key = str(content.get("session_key"))
    await keep(crypto, origin, (original_key, claimed), room_id, session_id, session_key)


async def keep(  # noqa: PLR0917 - the key and where it comes from
    crypto: Crypto,
    sender: str,
    device_keys: tuple[str, object],
    room_id: str,
    session_id: object,
    session_key: str,
    *,
    exported: bool = True,
) -> None:
    """A room key kept, if it passes :func:`refusal`."""
    if f"{room_id}|{session_id}" in crypto.store.inbound:
        return
    why = await refusal(crypto, sender, device_keys, room_id)
    if why is not None:
        # Debug only: anyone can send these, and a flood must not fill the log either.
        log.debug("matrix_room_key_refused", sender=sender, room=room_id, reason=why)
        return
    try:
        session = (
            InboundGroupSession.import_session(session_key)
            if exported
            else InboundGroupSession(session_key)
        )
    except OlmGroupSessionError:
        log.warning("matrix_room_key_unreadable", sender=sender)
        return
    if session.id != session_id:
        log.warning("matrix_room_key_mismatch", sender=sender)
        return
    claimed = device_keys[1]
    sender_keys = (device_keys[0], claimed if isinstance(claimed, str) else "")
    crypto.store.add_inbound(room_id, session, sender_keys)  # saved by on_sync
    if crypto.backup is not None and isinstance(claimed, str):
        crypto.backup.add(Pending(room_id, session, device_keys[0], claimed))
    log.info("matrix_room_key_received", room=room_id, sender=sender)


async def refusal(
    crypto: Crypto, sender: str, device_keys: tuple[str, object], room_id: str
) -> str | None:
    """Why a room key from ``sender`` for ``room_id`` is not kept (None: it is)."""
    members = crypto.members.get(room_id)
    if members is None:
        members = crypto.members[room_id] = await joined(crypto, room_id)
    if isinstance(members, str):
        return members
    if sender not in members:
        return "its sender is not in the room"
    curve25519, ed25519 = device_keys
    try:
        devices = await crypto.devices_of([sender])
    except (MatrixError, UnreachableError):
        return "its sender's devices could not be checked"
    if not any(d.curve25519 == curve25519 and d.ed25519 == ed25519 for d in devices):
        return "not from a device of its sender"
    return None


async def joined(crypto: Crypto, room_id: str) -> frozenset[str] | str:
    """The room's joined members, or why a key for it is not kept."""
    try:
        answer = await crypto.client.call(
            "GET", f"/_matrix/client/v3/rooms/{q(room_id)}/joined_members"
        )
    except MatrixError:
        return "a room the bot is not in"
    except UnreachableError:
        return "the room's members could not be checked"
    joined = answer.get("joined")
    return frozenset(joined) if isinstance(joined, dict) else "a room the bot is not in"
