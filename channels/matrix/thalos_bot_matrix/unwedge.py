"""Wedged Olm sessions, mended as Element does.

A to-device message that no Olm session opens, from a device the bot knows (its
curve25519 key is one of its sender's listed devices), means the two ends no longer
share a session: one side lost it (a state folder restored from an older copy, a
reinstalled client). The bot then claims one of that device's one-time keys, opens a
new Olm session and sends an ``m.dummy`` over it, so the other side learns the new
session and uses it for what it sends next (the room key it may send again, or the
answer to the bot's key request, :mod:`.key_asks`). At most once per device per
:data:`RETRY` seconds (in memory: a restart may mend once more), so a device that keeps
sending what cannot be opened costs one claim an hour, not one per message. A message
from a key no listed device has is only logged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from thalos_bot_matrix.client import JSON, MatrixError, UnreachableError

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto

log = structlog.get_logger(__name__)

RETRY = 3600.0
"""Least seconds between two new sessions forced with one device."""
REMEMBERED = 1000
"""Devices whose last forced session is remembered (the oldest forgotten first)."""


async def mend(crypto: Crypto, event: JSON) -> None:
    """``event`` (an Olm ``m.room.encrypted`` to-device event) could not be opened."""
    content = event.get("content")
    sender = event.get("sender")
    sender_key = content.get("sender_key") if isinstance(content, dict) else None
    if not isinstance(sender, str) or not isinstance(sender_key, str):
        return
    now = crypto.clock()
    last = crypto.unwedged.get(sender_key)
    if last is not None and now - last < RETRY:
        log.info("matrix_olm_unwedge_skipped", user=sender, reason="mended within the hour")
        return
    try:
        devices = await crypto.devices_of([sender])
        device = next((d for d in devices if d.curve25519 == sender_key), None)
        if device is None:
            log.info("matrix_olm_unwedge_skipped", user=sender, reason="not a known device")
            return
        crypto.unwedged.pop(sender_key, None)
        crypto.unwedged[sender_key] = now  # newest last
        while len(crypto.unwedged) > REMEMBERED:
            crypto.unwedged.pop(next(iter(crypto.unwedged)))
        if not await crypto.open_sessions([device], fresh=True):
            return
        await crypto.send_olm(device, "m.dummy", {})
    except (MatrixError, UnreachableError) as exc:
        log.warning("matrix_olm_unwedge_failed", user=sender, error=str(exc))
        return
    log.info("matrix_olm_session_unwedged", user=sender, device=device.device_id)
