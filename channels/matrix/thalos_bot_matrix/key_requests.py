"""Answering ``m.room_key_request``: only the bot's own devices that its self-signing
key has signed (verified by the account itself) are sent a room key they ask for, as an
Olm-encrypted ``m.forwarded_room_key``. Anyone else's request, another user's or an
unsigned device's, is dropped with a debug line and costs no request to the homeserver
before that check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from thalos_bot_matrix.client import JSON, MatrixError, UnreachableError
from thalos_bot_matrix.signing import public_of, signed_by

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto, Device

log = structlog.get_logger(__name__)

MEGOLM = "m.megolm.v1.aes-sha2"
SELF_SIGNING = "m.cross_signing.self_signing"


async def answer(crypto: Crypto, event: JSON) -> None:
    content = event.get("content")
    sender = event.get("sender")
    if not isinstance(content, dict) or content.get("action") != "request":
        return
    body = content.get("body")
    requester = content.get("requesting_device_id")
    if not isinstance(body, dict) or not isinstance(requester, str):
        return
    room_id, session_id = body.get("room_id"), body.get("session_id")
    if sender != crypto.user_id:
        log.debug("matrix_key_request_refused", sender=sender, reason="another user")
        return
    if requester == crypto.device_id:
        return
    try:
        device = await verified_own_device(crypto, requester)
    except (MatrixError, UnreachableError) as exc:
        log.warning("matrix_key_request_unchecked", error=str(exc))
        return
    if device is None:
        log.debug("matrix_key_request_refused", device=requester, reason="not cross-signed")
        return
    key = f"{room_id}|{session_id}"
    session = crypto.store.inbound.get(key)
    if session is None or not isinstance(room_id, str):
        log.debug("matrix_key_request_unknown_key", device=requester, room=room_id)
        return
    sender_key, ed25519 = crypto.store.senders.get(key, ("", ""))
    forwarded: JSON = {
        "algorithm": MEGOLM,
        "room_id": room_id,
        "session_id": session_id,
        "session_key": session.export_session(session.first_known_index),
        "sender_key": sender_key or body.get("sender_key"),
        "sender_claimed_ed25519_key": ed25519,
        "forwarding_curve25519_key_chain": [],
    }
    try:
        sent = await crypto.send_olm(device, "m.forwarded_room_key", forwarded)
    except (MatrixError, UnreachableError) as exc:
        log.warning("matrix_key_forward_failed", error=str(exc))
        return
    if sent:
        log.info("matrix_room_key_forwarded", device=requester, room=room_id)


async def verified_own_device(crypto: Crypto, device_id: str) -> Device | None:
    """The bot account's device ``device_id``, if the self-signing key signed it."""
    from thalos_bot_matrix.crypto import valid_devices

    seed = crypto.store.secrets.get(SELF_SIGNING)
    if seed is None:
        return None
    ssk = public_of(seed)
    found = await crypto.client.call(
        "POST",
        "/_matrix/client/v3/keys/query",
        body={"device_keys": {crypto.user_id: [device_id]}},
    )
    listed = found.get("device_keys")
    mine = listed.get(crypto.user_id) if isinstance(listed, dict) else None
    keys = mine.get(device_id) if isinstance(mine, dict) else None
    if not isinstance(keys, dict):
        return None
    if not signed_by(keys, crypto.user_id, ssk, ssk):
        return None
    devices = valid_devices(crypto.user_id, {device_id: keys})
    return devices[0] if devices else None
