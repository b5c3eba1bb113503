"""Asking for room keys the bot lacks, and decrypting again when they come.

- **Remembered.** An ``m.room.encrypted`` event whose Megolm session the bot does not
  hold is kept in memory (at most :data:`MAX_WAITING` events, the oldest dropped first,
  each for at most :data:`MAX_AGE` seconds; a restart forgets them), and the session is
  asked for once: an ``m.room_key_request``, in the clear as the spec has it, to every
  device of the event's sender and of the bot's own account.
- **Retried.** When the session arrives (a late ``m.room_key``, an
  ``m.forwarded_room_key`` answering the request, a key backup restore), the events
  waiting on it are handed back once, in the order they came, to be decrypted and
  handled like any other, and the request is cancelled (``request_cancellation``).
- **Forwarded keys.** One is taken only for a session the bot asked for, with the
  sender key of the event that waits on it, and only from the device that made the
  session (a device of the event's sender whose curve25519 key is the session's
  sender key) or from one of the bot's own devices its self-signing key signed. Any
  other forwarded key is dropped (``matrix_forwarded_key_refused``, debug).
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from thalos_bot_matrix.client import JSON, MatrixError, UnreachableError

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto

log = structlog.get_logger(__name__)

MEGOLM = "m.megolm.v1.aes-sha2"
MAX_WAITING = 200
"""Undecryptable events remembered at once (the oldest is forgotten first)."""
MAX_AGE = 3600.0
"""Seconds an undecryptable event is remembered; a key that comes later does not bring
it back."""


@dataclass
class Asked:
    """One session asked for."""

    request_id: str
    sender: str
    """The user whose event waits on it."""
    sender_key: str
    """The session's sender key, as the waiting event names it."""


@dataclass
class Waiting:
    room_id: str
    event: JSON
    session: str
    """``room|session_id``."""
    since: float


@dataclass
class KeyAsks:
    """What waits for a key, and which sessions were asked for (no I/O here)."""

    max_waiting: int = MAX_WAITING
    max_age: float = MAX_AGE
    clock: Callable[[], float] = time.monotonic
    waiting: OrderedDict[str, Waiting] = field(default_factory=OrderedDict)
    """By event id, oldest first."""
    asked: dict[str, Asked] = field(default_factory=dict)
    """By ``room|session_id``."""

    def remember(self, room_id: str, event: JSON) -> Asked | None:
        """Keep ``event`` until its session comes; the request to send, if this is the
        first event waiting on that session (``None``: nothing to send)."""
        self.expire()
        content = event.get("content")
        content = content if isinstance(content, dict) else {}
        event_id, session_id = event.get("event_id"), content.get("session_id")
        sender, sender_key = event.get("sender"), content.get("sender_key")
        if not all(isinstance(v, str) for v in (event_id, session_id, sender, sender_key)):
            return None
        assert isinstance(event_id, str)
        assert isinstance(sender, str)
        assert isinstance(sender_key, str)
        if event_id in self.waiting:
            return None
        key = f"{room_id}|{session_id}"
        self.waiting[event_id] = Waiting(room_id, event, key, self.clock())
        while len(self.waiting) > self.max_waiting:
            _, dropped = self.waiting.popitem(last=False)
            log.info("matrix_undecryptable_forgotten", room=dropped.room_id, reason="too many")
            self._forget_unwaited(dropped.session)
        if key in self.asked:
            return None
        asked = Asked(secrets.token_hex(12), sender, sender_key)
        self.asked[key] = asked
        return asked

    def expire(self) -> None:
        """Forget what waited longer than ``max_age``."""
        now = self.clock()
        for event_id, item in list(self.waiting.items()):
            if now - item.since <= self.max_age:
                break  # oldest first
            del self.waiting[event_id]
            log.info("matrix_undecryptable_forgotten", room=item.room_id, reason="too old")
            self._forget_unwaited(item.session)

    def _forget_unwaited(self, session: str) -> None:
        if not any(w.session == session for w in self.waiting.values()):
            self.asked.pop(session, None)

    def ready(self, inbound: Mapping[str, object]) -> tuple[list[tuple[str, JSON]], list[str]]:
        """The events whose session is now held, taken out (each once, oldest first),
        and the ids of the requests they answer."""
        self.expire()
        found = [(i, w) for i, w in self.waiting.items() if w.session in inbound]
        for event_id, _ in found:
            del self.waiting[event_id]
        sessions = {w.session for _, w in found} & set(self.asked)
        answered = [self.asked.pop(s).request_id for s in sorted(sessions)]
        return [(w.room_id, w.event) for _, w in found], answered


async def ask(crypto: Crypto, room_id: str, event: JSON, *, allowed: bool) -> None:
    """``event`` could not be decrypted: remember it and ask for its session (only an
    allowed sender's: anyone else's would cost a request each and is never answered)."""
    content = event.get("content")
    session_id = content.get("session_id") if isinstance(content, dict) else None
    if not allowed or f"{room_id}|{session_id}" in crypto.store.inbound:
        log.warning("matrix_event_undecryptable", room=room_id, sender=event.get("sender"))
        return
    asked = crypto.asks.remember(room_id, event)
    log.warning(
        "matrix_event_undecryptable",
        room=room_id,
        sender=event.get("sender"),
        note="key asked for" if asked is not None else "waiting for its key",
    )
    if asked is None:
        return
    request: JSON = {
        "action": "request",
        "body": {
            "algorithm": MEGOLM,
            "room_id": room_id,
            "sender_key": asked.sender_key,
            "session_id": session_id,
        },
        "request_id": asked.request_id,
        "requesting_device_id": crypto.device_id,
    }
    await _send(crypto, {asked.sender, crypto.user_id}, request)
    log.info("matrix_room_key_requested", room=room_id, sender=asked.sender)


async def ready(crypto: Crypto) -> list[tuple[str, JSON]]:
    """The remembered events whose session the store now holds (each handed out once,
    oldest first); the requests they answer are cancelled."""
    events, answered = crypto.asks.ready(crypto.store.inbound)
    await cancel(crypto, answered)
    for room_id, _event in events:
        log.info("matrix_event_decryptable_now", room=room_id)
    return events


async def cancel(crypto: Crypto, request_ids: list[str]) -> None:
    """The requests an arrived session answered, cancelled on every device asked."""
    for request_id in request_ids:
        cancellation: JSON = {
            "action": "request_cancellation",
            "request_id": request_id,
            "requesting_device_id": crypto.device_id,
        }
        await _send(crypto, {crypto.user_id}, cancellation)  # the others' need not know


async def _send(crypto: Crypto, users: set[str], content: JSON) -> None:
    try:
        await crypto.client.call(
            "PUT",
            f"/_matrix/client/v3/sendToDevice/m.room_key_request/{secrets.token_hex(12)}",
            body={"messages": {user: {"*": content} for user in sorted(users)}},
        )
    except (MatrixError, UnreachableError) as exc:
        log.warning("matrix_room_key_request_failed", error=str(exc))


def forwarded_from(
    crypto: Crypto, sender: str, forwarder_key: str, content: object
) -> tuple[str, str, str, str] | None:
    """For an ``m.forwarded_room_key`` from ``sender``'s device ``forwarder_key``: its
    room, session id, the session's sender key and claimed ed25519 key, if the bot
    asked for it (who may forward it is checked by the caller); ``None`` otherwise."""
    if not isinstance(content, dict) or content.get("algorithm") != MEGOLM:
        return None
    room_id, session_id = content.get("room_id"), content.get("session_id")
    sender_key, claimed = content.get("sender_key"), content.get("sender_claimed_ed25519_key")
    if not all(isinstance(v, str) for v in (room_id, session_id, sender_key, claimed)):
        return None
    asked = crypto.asks.asked.get(f"{room_id}|{session_id}")
    if asked is None or asked.sender_key != sender_key:
        log.debug("matrix_forwarded_key_refused", sender=sender, reason="not asked for")
        return None
    if forwarder_key != sender_key and sender != crypto.user_id:
        log.debug("matrix_forwarded_key_refused", sender=sender, reason="not its maker")
        return None
    return str(room_id), str(session_id), str(sender_key), str(claimed)
