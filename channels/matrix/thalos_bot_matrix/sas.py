"""Emoji verification (SAS, ``m.key.verification.*``, to-device) of the bot's device by
an allowed user, with the bot as the side that accepts.

- **Who.** Only an allowed user's device: a request or a start from anyone else is
  answered with ``m.key.verification.cancel``, code ``m.user``.
- **Where.** As to-device messages (verifying one device), or as events in a direct
  chat (Element's verification of another user: an ``m.room.message`` request, then
  steps that refer to it), answered the same way it came.
- **How.** ``m.sas.v1 with ``curve25519-hkdf-sha256`` key agreement, ``sha256``, the
  MAC ``hkdf-hmac-sha256.v2`` when offered (else ``hkdf-hmac-sha256``, libolm's), and
  emoji. A ``request`` is answered ``ready``; a ``start`` is accepted with the
  commitment to the bot's ephemeral key; after the keys are exchanged the seven emoji
  are logged (``matrix_sas_emoji``) and kept in a private file for
  ``thalos-bot matrix verify`` (:mod:`.sas_pending`).
- **Confirming.** The bot sends its MAC (its device key, and its master key when it
  has cross-signing) only once the operator confirmed the emoji with ``thalos-bot
  matrix verify``, or at once with ``auto_confirm_sas = true``. It checks the other
  side's MAC of that device's key (and of the user's master key, when sent and
  published). Both done: the device is verified (kept in the store), its user's master
  key, when it was in the MAC, is the one pinned for ``trust = "cross-signed"`` and is
  signed with the account's user-signing key (as Element does), and
  ``m.key.verification.done`` goes out.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog
from olm.sas import OlmSasError, Sas

from thalos_bot_matrix import cross_signing, sas_pending
from thalos_bot_matrix.client import JSON, MatrixError, UnreachableError, q
from thalos_bot_matrix.sas_emoji import emoji_of
from thalos_bot_matrix.signing import canonical, only_key, public_of

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto, Device

log = structlog.get_logger(__name__)

PREFIX = "m.key.verification."
AGREEMENT = "curve25519-hkdf-sha256"
MACS = ("hkdf-hmac-sha256.v2", "hkdf-hmac-sha256")
MASTER = "m.cross_signing.master"
ROOM_STEPS = frozenset(
    PREFIX + step for step in ("ready", "start", "accept", "key", "mac", "cancel", "done")
)
MAX_FLOWS = 20
"""Verifications (and in-room requests) kept at once; the oldest is dropped first."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode().rstrip("=")


@dataclass
class Verification:
    txn: str
    device: Device
    sas: Sas = field(default_factory=Sas)
    mac_method: str = ""
    commitment_of: str = ""
    emoji: list[tuple[str, str]] = field(default_factory=list)
    confirmed: bool = False
    mac_sent: bool = False
    their_mac: JSON | None = None
    done: bool = False


class Verifier:
    def __init__(
        self, crypto: Crypto, allowed: frozenset[str], *, auto_confirm: bool, state_dir: Path
    ) -> None:
        self.crypto = crypto
        self.allowed = allowed
        self.auto_confirm = auto_confirm
        self.pending_file = sas_pending.path(state_dir, crypto.user_id)
        self.active: dict[str, Verification] = {}
        self.rooms: dict[str, tuple[str, bool]] = {}
        """In-room flows: the request's event id → its room, and whether it is encrypted."""

    async def in_room(self, room_id: str, event: JSON, *, encrypted: bool) -> bool:
        """A (decrypted) room event of an in-room verification, taken (True), or not
        one (False). The request is an ``m.room.message`` to the bot; every later step
        refers to it (``m.reference``), and the request's event id is the flow's id."""
        kind, content = event.get("type"), event.get("content")
        if not isinstance(content, dict) or not isinstance(kind, str):
            return False
        if kind == "m.room.message" and content.get("msgtype") == PREFIX + "request":
            flow = event.get("event_id")
            if content.get("to") != self.crypto.user_id or not isinstance(flow, str):
                return True
            self.rooms[flow] = (room_id, encrypted)
            while len(self.rooms) > MAX_FLOWS:
                self.rooms.pop(next(iter(self.rooms)))
            kind = PREFIX + "request"
        elif kind.startswith(PREFIX):
            relates = content.get("m.relates_to")
            flow = relates.get("event_id") if isinstance(relates, dict) else None
            if not isinstance(flow, str) or flow not in self.rooms:
                return True
        else:
            return False
        plain = {k: v for k, v in content.items() if k != "m.relates_to"}
        await self.on_event({**event, "type": kind, "content": plain | {"transaction_id": flow}})
        return True

    async def on_event(self, event: JSON) -> None:
        kind, sender, content = event.get("type"), event.get("sender"), event.get("content")
        if not isinstance(kind, str) or not isinstance(sender, str):
            return
        if not isinstance(content, dict) or not isinstance(content.get("transaction_id"), str):
            return
        txn = str(content["transaction_id"])
        step = kind.removeprefix(PREFIX)
        if step in {"request", "start"} and sender not in self.allowed:
            log.info("matrix_sas_refused", user=sender, reason="not an allowed user")
            device = content.get("from_device")
            await self._cancel_to(sender, str(device), txn, "m.user", "Not an allowed user")
            return
        if step == "request":
            await self._ready(sender, content, txn)
        elif step == "start":
            await self._start(sender, content, txn)
        elif step == "cancel":
            if self.active.pop(txn, None) is not None:
                log.info("matrix_sas_cancelled", code=content.get("code"))
                await self._forget(txn)
        elif (found := self.active.get(txn)) is not None and found.device.user_id == sender:
            if step == "key":
                await self._key(found, content)
            elif step == "mac":
                found.their_mac = content
                await self._finish(found)

    # -- steps ---------------------------------------------------------------------------

    async def _ready(self, sender: str, content: JSON, txn: str) -> None:
        methods = content.get("methods")
        device = content.get("from_device")
        if not isinstance(methods, list) or "m.sas.v1" not in methods:
            await self._cancel_to(sender, str(device), txn, "m.unknown_method", "SAS only")
            return
        ready = {"from_device": self.crypto.device_id, "methods": ["m.sas.v1"]}
        await self._send(sender, str(device), "ready", {**ready, "transaction_id": txn})

    async def _start(self, sender: str, content: JSON, txn: str) -> None:
        device_id = content.get("from_device")
        devices = await self.crypto.devices_of([sender])
        device = next((d for d in devices if d.device_id == device_id), None)
        if device is None:
            await self._cancel_to(sender, str(device_id), txn, "m.unknown_method", "Unknown device")
            return
        macs = content.get("message_authentication_codes")
        mac = next((m for m in MACS if isinstance(macs, list) and m in macs), None)
        strings = content.get("short_authentication_string")
        if (
            content.get("method") != "m.sas.v1"
            or AGREEMENT not in (content.get("key_agreement_protocols") or [])
            or "sha256" not in (content.get("hashes") or [])
            or mac is None
            or not isinstance(strings, list)
            or "emoji" not in strings
        ):
            await self._cancel_to(sender, device.device_id, txn, "m.unknown_method", "Unsupported")
            return
        found = Verification(txn, device, mac_method=mac)
        self.active[txn] = found
        while len(self.active) > MAX_FLOWS:
            self.active.pop(next(iter(self.active)))
        sent = content
        if txn in self.rooms:  # the start as its sender made it
            sent = {k: v for k, v in content.items() if k != "transaction_id"}
            sent["m.relates_to"] = {"rel_type": "m.reference", "event_id": txn}
        commitment = _b64(hashlib.sha256((found.sas.pubkey + canonical(sent)).encode()).digest())
        accept = {
            "transaction_id": txn,
            "method": "m.sas.v1",
            "key_agreement_protocol": AGREEMENT,
            "hash": "sha256",
            "message_authentication_code": mac,
            "short_authentication_string": ["emoji"],
            "commitment": commitment,
        }
        await self._send(sender, device.device_id, "accept", accept)

    async def _key(self, found: Verification, content: JSON) -> None:
        key = content.get("key")
        if not isinstance(key, str) or found.emoji:
            await self._cancel(found, "m.unexpected_message", "Unexpected key")
            return
        found.sas.set_their_pubkey(key)
        them, me = found.device, self.crypto
        await self._send(
            them.user_id,
            them.device_id,
            "key",
            {"transaction_id": found.txn, "key": found.sas.pubkey},
        )
        info = (
            f"MATRIX_KEY_VERIFICATION_SAS|{them.user_id}|{them.device_id}|{key}"
            f"|{me.user_id}|{me.device_id}|{found.sas.pubkey}|{found.txn}"
        )
        found.emoji = emoji_of(found.sas.generate_bytes(info, 6))
        shown = " ".join(f"{symbol} {name}" for symbol, name in found.emoji)
        log.warning(
            "matrix_sas_emoji",
            user=them.user_id,
            device=them.device_id,
            emoji=shown,
            note="confirm with `thalos-bot matrix verify` if they match"
            if not self.auto_confirm
            else "confirmed automatically (auto_confirm_sas)",
        )
        if self.auto_confirm:
            found.confirmed = True
            await self._finish(found)
        else:
            await anyio.to_thread.run_sync(
                sas_pending.add, self.pending_file, found.txn, them.user_id, them.device_id, shown
            )

    async def confirmations(self) -> None:
        """Verifications the operator confirmed (``thalos-bot matrix verify``) go on."""
        if self.auto_confirm or not self.active:
            return
        confirmed = await anyio.to_thread.run_sync(sas_pending.confirmed, self.pending_file)
        for txn in confirmed:
            found = self.active.get(txn)
            if found is not None and found.emoji and not found.confirmed:
                found.confirmed = True
                await self._finish(found)

    async def _finish(self, found: Verification) -> None:
        """Our MAC once confirmed; theirs checked once it came; done when both are."""
        if not found.confirmed or found.done:
            return
        if not found.mac_sent:
            await self._send_mac(found)
        if found.their_mac is None:
            return
        published = await self._their_master(found.device.user_id)
        master = only_key(published)
        if not self._mac_ok(found, found.their_mac, master):
            await self._cancel(found, "m.key_mismatch", "Key mismatch")
            return
        found.done = True
        them = found.device
        self.crypto.store.put_secret(f"verified:{them.key}", them.ed25519)
        if master is not None and f"ed25519:{master}" in (found.their_mac.get("mac") or {}):
            self.crypto.store.put_secret(f"master:{them.user_id}", master)
            try:
                await cross_signing.sign_user(self.crypto, published or {})
            except (MatrixError, UnreachableError) as exc:
                log.warning("matrix_user_signature_failed", error=str(exc))
        self.crypto.forget_devices(them.user_id)
        await self.crypto.store.save()
        await self._send(them.user_id, them.device_id, "done", {"transaction_id": found.txn})
        self.active.pop(found.txn, None)
        await self._forget(found.txn)
        log.info("matrix_sas_verified", user=them.user_id, device=them.device_id)

    # -- MACs ----------------------------------------------------------------------------

    def _calc(self, found: Verification, value: str, info: str) -> str:
        if found.mac_method == MACS[0]:
            return str(found.sas.calculate_mac_fixed_base64(value, info))
        return str(found.sas.calculate_mac(value, info))

    async def _send_mac(self, found: Verification) -> None:
        me, them = self.crypto, found.device
        info = (
            f"MATRIX_KEY_VERIFICATION_MAC{me.user_id}{me.device_id}"
            f"{them.user_id}{them.device_id}{found.txn}"
        )
        keys = {f"ed25519:{me.device_id}": me.identity["ed25519"]}
        seed = me.store.secrets.get(MASTER)
        if seed is not None:
            master = public_of(seed)
            keys[f"ed25519:{master}"] = master
        mac = {key_id: self._calc(found, key, info + key_id) for key_id, key in keys.items()}
        content = {
            "transaction_id": found.txn,
            "mac": mac,
            "keys": self._calc(found, ",".join(sorted(keys)), info + "KEY_IDS"),
        }
        found.mac_sent = True
        await self._send(them.user_id, them.device_id, "mac", content)

    def _mac_ok(self, found: Verification, content: JSON, master: str | None) -> bool:
        me, them = self.crypto, found.device
        info = (
            f"MATRIX_KEY_VERIFICATION_MAC{them.user_id}{them.device_id}"
            f"{me.user_id}{me.device_id}{found.txn}"
        )
        macs = content.get("mac")
        if not isinstance(macs, dict) or not macs:
            return False
        if content.get("keys") != self._calc(found, ",".join(sorted(macs)), info + "KEY_IDS"):
            return False
        known = {f"ed25519:{them.device_id}": them.ed25519}
        if master is not None:
            known[f"ed25519:{master}"] = master
        if f"ed25519:{them.device_id}" not in macs:
            return False
        for key_id, mac in macs.items():
            key = known.get(str(key_id))
            if key is None:
                continue  # a key the bot does not know: not trusted, not a failure
            if mac != self._calc(found, key, info + str(key_id)):
                return False
        return True

    async def _their_master(self, user: str) -> JSON | None:
        """``user``'s published master key (``None``: none, or it could not be read)."""
        try:
            answer = await self.crypto.client.call(
                "POST", "/_matrix/client/v3/keys/query", body={"device_keys": {user: []}}
            )
        except (MatrixError, UnreachableError):
            return None
        part = answer.get("master_keys")
        published = part.get(user) if isinstance(part, dict) else None
        return published if isinstance(published, dict) else None

    # -- sending -------------------------------------------------------------------------

    async def _cancel(self, found: Verification, code: str, reason: str) -> None:
        self.active.pop(found.txn, None)
        await self._forget(found.txn)
        log.warning("matrix_sas_cancelled", user=found.device.user_id, code=code)
        await self._cancel_to(found.device.user_id, found.device.device_id, found.txn, code, reason)

    async def _cancel_to(self, user: str, device: str, txn: str, code: str, reason: str) -> None:
        content = {"transaction_id": txn, "code": code, "reason": reason}
        await self._send(user, device, "cancel", content)

    async def _send(self, user: str, device: str, step: str, content: JSON) -> None:
        """To the device, or into the room of an in-room flow (encrypted if it is)."""
        from secrets import token_hex

        flow = str(content.get("transaction_id"))
        try:
            if flow not in self.rooms:
                await self.crypto.client.call(
                    "PUT",
                    f"/_matrix/client/v3/sendToDevice/{q(PREFIX + step)}/{token_hex(12)}",
                    body={"messages": {user: {device: content}}},
                )
                return
            room, encrypted = self.rooms[flow]
            body = {k: v for k, v in content.items() if k != "transaction_id"}
            body["m.relates_to"] = {"rel_type": "m.reference", "event_id": flow}
            kind = PREFIX + step
            if encrypted:
                body, kind = await self.crypto.encrypt(room, kind, body), "m.room.encrypted"
            await self.crypto.client.send(room, kind, token_hex(12), body)
        except (MatrixError, UnreachableError) as exc:
            log.warning("matrix_sas_send_failed", step=step, error=str(exc))

    async def _forget(self, txn: str) -> None:
        if not self.auto_confirm:
            await anyio.to_thread.run_sync(sas_pending.remove, self.pending_file, txn)


async def in_room(crypto: Crypto, room_id: str, event: JSON, *, encrypted: bool) -> bool:
    """Whether ``event`` was a step of an in-room verification (taken by the verifier)."""
    verifier = crypto.verifier
    try:
        return verifier is not None and await verifier.in_room(room_id, event, encrypted=encrypted)
    except (MatrixError, UnreachableError, OlmSasError, ValueError, KeyError) as exc:
        log.warning("matrix_sas_step_failed", error=type(exc).__name__)
        return True


async def guarded(verifier: Verifier, event: JSON) -> None:
    """A to-device step; a failure ends that verification only, never the sync batch
    (its room keys come after it)."""
    try:
        await verifier.on_event(event)
    except (MatrixError, UnreachableError, OlmSasError, ValueError, KeyError) as exc:
        log.warning("matrix_sas_step_failed", error=type(exc).__name__)
