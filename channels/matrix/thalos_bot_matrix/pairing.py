"""``thalos-bot matrix pair``: find the Matrix id of the person setting the bot up.

The command signs in as the bot, shows a one-time code (single use, ten minutes,
compared in constant time), and syncs. While it waits it joins direct-chat invites from
anyone, since the person is not allowed yet, but answers nobody: a wrong code, a
stranger, a room message are all ignored without a word. The sender of the right code in
a direct chat is the one; every other room joined meanwhile is left again. The sync
position reached is kept, so the daemon never sees (and answers) what pairing read.
With encryption on, the chat may be encrypted: the batch's room keys are taken and the
code decrypted as the daemon does (:mod:`.crypto`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from thalos_bot.channels.admission.pairing import PairingCode, PairingError, PairingExpiredError
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.events import (
    content_of,
    events_in,
    invite_sender,
    rooms_in,
    strip_reply_fallback,
    text_field,
)
from thalos_bot_matrix.state import SyncState
from thalos_bot_matrix.sync import FILTER

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Person:
    user_id: str
    room_id: str
    encrypted: bool = False


async def wait_for_code(
    client: MatrixClient,
    me: str,
    code: PairingCode,
    state: SyncState,
    *,
    poll_s: float,
    crypto: Crypto | None = None,
) -> Person:
    """Sync until someone sends ``code`` in a direct chat. Raises PairingError when the
    code expires or the homeserver refuses the sync."""
    joined: set[str] = set()
    try:
        while not code.expired:
            try:
                batch = await client.sync(state.next_batch, poll_s, FILTER)
            except UnreachableError:
                continue
            except MatrixError as exc:
                raise PairingError(f"the homeserver refused to sync ({exc.errcode})") from None
            if crypto is not None:
                await crypto.on_sync(batch)
            history = state.next_batch is None
            found = await _scan(client, me, code, batch, joined, history=history, crypto=crypto)
            token = batch.get("next_batch")
            if isinstance(token, str):
                state.next_batch = token
            if found is not None:
                joined.discard(found.room_id)
                return found
        raise PairingExpiredError("thalos-bot matrix pair")
    finally:
        for room_id in joined:
            try:
                await client.leave(room_id)
            except (MatrixError, UnreachableError):
                log.info("matrix_pairing_leave_failed", room=room_id)
        await state.save(me)


async def _scan(
    client: MatrixClient,
    me: str,
    code: PairingCode,
    batch: JSON,
    joined: set[str],
    *,
    history: bool,
    crypto: Crypto | None,
) -> Person | None:
    for room_id, room in rooms_in(batch, "invite"):
        sender, direct, _encrypted = invite_sender(room, me)
        if sender is not None and direct:
            try:
                await client.join(room_id)
                joined.add(room_id)
            except (MatrixError, UnreachableError):
                continue
    if history:
        return None
    for room_id, room in rooms_in(batch, "join"):
        for event in events_in(room, "timeline"):
            sealed = event.get("type") == "m.room.encrypted"
            if sealed and crypto is not None:
                event = crypto.decrypt(room_id, event) or event  # noqa: PLW2901
            if event.get("type") != "m.room.message":
                continue
            sender = event.get("sender")
            if not isinstance(sender, str) or sender == me or room_id not in joined:
                continue
            body = strip_reply_fallback(text_field(content_of(event), "body"))
            if code.redeem(body):
                return Person(sender, room_id, encrypted=sealed)
    return None
