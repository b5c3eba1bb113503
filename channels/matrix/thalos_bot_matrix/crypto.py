"""End-to-end encryption (Olm and Megolm, through python-olm on libolm).

- **Keys.** At start the device's identity keys are uploaded (once: they are kept in
  the store) and the one-time keys topped up to half of what libolm holds; each sync's
  ``device_one_time_keys_count`` tops them up again when others claimed some.
- **Receiving.** Olm-encrypted to-device events are decrypted (a pre-key message opens
  a new Olm session and uses up its one-time key); an ``m.room_key`` among them gives a
  Megolm session, with which ``m.room.encrypted`` room events are decrypted. Anyone may
  send the device a room key for any room id, so one is kept only when it comes from a
  device of its sender (its Olm keys are that device's, as the sender's device list
  says) and the sender is a member of that room, a room the bot is in (the bot joins
  only the rooms it serves): a stranger's keys would only fill the store.
- **Sending.** Into an encrypted room, content is Megolm-encrypted with the room's
  session; before that its key goes (Olm-encrypted, to-device) to every device of every
  joined member that does not have it yet, claiming a one-time key to open an Olm
  session where there is none. ``m.relates_to`` (edits, replies) is copied to the
  cleartext wrapper, as the spec asks, so edits still aggregate.
- **Trust** (Element's default): devices are not required to be verified. A device
  whose keys are validly self-signed gets the room key even if nobody verified it, with
  a ``matrix_unverified_device`` warning logged; a device whose signature does not check
  out gets nothing.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import structlog
from olm.group_session import InboundGroupSession, OlmGroupSessionError, OutboundGroupSession
from olm.session import (
    InboundSession,
    OlmMessage,
    OlmPreKeyMessage,
    OlmSessionError,
    OutboundSession,
)

from thalos_bot_matrix import key_asks, key_requests, room_keys, sas, unwedge
from thalos_bot_matrix.backup import Backup, Pending
from thalos_bot_matrix.client import JSON, MatrixClient, q
from thalos_bot_matrix.crypto_store import CryptoStore, Outbound
from thalos_bot_matrix.events import events_in, rooms_in
from thalos_bot_matrix.signing import signed, signed_by
from thalos_bot_matrix.trust import Trust, cross_signed, verified

log = structlog.get_logger(__name__)

OLM = "m.olm.v1.curve25519-aes-sha2"
MEGOLM = "m.megolm.v1.aes-sha2"
ROTATE_MESSAGES = 100
ROTATE_SECONDS = 7 * 24 * 3600


class Device:
    def __init__(self, user_id: str, device_id: str, curve25519: str, ed25519: str) -> None:
        self.user_id = user_id
        self.device_id = device_id
        self.curve25519 = curve25519
        self.ed25519 = ed25519

    @property
    def key(self) -> str:
        return f"{self.user_id}|{self.device_id}"


class Crypto:
    def __init__(self, client: MatrixClient, store: CryptoStore, trust: Trust = "tofu") -> None:
        self.client = client
        self.trust: Trust = trust
        """Which devices get room keys (see :mod:`.trust`)."""
        self.store = store
        self.user_id = store.user_id
        self.device_id = store.device_id
        self._devices: dict[str, list[Device]] = {}
        self._warned: set[str] = set()
        self.backup: Backup | None = None
        """Where new room keys are backed up (see :mod:`.backup`), once it is on."""
        self._unsendable: set[str] = set()
        """``user|device`` of devices the trust policy gives no room keys."""
        self.members: dict[str, frozenset[str] | str] = {}
        """Joined members (or a refusal) per room, read once per sync batch."""
        self.asks = key_asks.KeyAsks()
        """Events waiting for a room key, and the keys asked for (:mod:`.key_asks`)."""
        self.verifier: sas.Verifier | None = None
        """Emoji verification by allowed users (:mod:`.sas`), once the channel sets it."""
        self.clock = time.monotonic
        self.unwedged: dict[str, float] = {}
        """When a new Olm session was last forced, by device curve25519 (:mod:`.unwedge`)."""

    @property
    def identity(self) -> dict[str, str]:
        keys: dict[str, str] = self.store.account.identity_keys
        return keys

    def sign_with_device(self, value: JSON) -> JSON:
        """``value`` with the device's signature added to those it has."""
        return signed(value, self.user_id, self.device_id, self.store.account)

    # -- keys ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Upload the device keys (first start) and top up the one-time keys."""
        body: JSON = {}
        if not self.store.published:
            keys = self.identity
            body["device_keys"] = self.sign_with_device(
                {
                    "user_id": self.user_id,
                    "device_id": self.device_id,
                    "algorithms": [OLM, MEGOLM],
                    "keys": {
                        f"curve25519:{self.device_id}": keys["curve25519"],
                        f"ed25519:{self.device_id}": keys["ed25519"],
                    },
                }
            )
        answer = await self.client.call("POST", "/_matrix/client/v3/keys/upload", body=body)
        if not self.store.published:
            self.store.published = True
            self.store.account_changed()
            await self.store.save()
            log.info("matrix_device_keys_uploaded", device=self.device_id)
        counts = answer.get("one_time_key_counts")
        await self.top_up(counts if isinstance(counts, dict) else {})

    async def top_up(self, counts: JSON) -> None:
        have = counts.get("signed_curve25519", 0)
        have = have if isinstance(have, int) else 0
        want = self.store.account.max_one_time_keys // 2
        if have >= want:
            return
        account = self.store.account
        account.generate_one_time_keys(want - have)
        self.store.account_changed()
        await self.store.save()  # the private halves before the public ones go out
        keys = {
            f"signed_curve25519:{key_id}": self.sign_with_device({"key": key})
            for key_id, key in account.one_time_keys["curve25519"].items()
        }
        await self.client.call(
            "POST", "/_matrix/client/v3/keys/upload", body={"one_time_keys": keys}
        )
        account.mark_keys_as_published()
        self.store.account_changed()
        await self.store.save()
        log.info("matrix_one_time_keys_uploaded", count=len(keys))

    async def on_sync(self, batch: JSON) -> None:
        """A sync's to-device events, one-time key count and changed device lists."""
        lists = batch.get("device_lists")
        changed = lists.get("changed") if isinstance(lists, dict) else None
        for user in changed if isinstance(changed, list) else []:
            self._devices.pop(user, None)
        to_device = batch.get("to_device")
        events = to_device.get("events") if isinstance(to_device, dict) else None
        self.members = {}
        handled = False
        try:
            for event in events if isinstance(events, list) else []:
                kind = event.get("type") if isinstance(event, dict) else None
                if kind == "m.room_key_request":
                    await key_requests.answer(self, event)
                elif isinstance(kind, str) and kind.startswith(sas.PREFIX) and self.verifier:
                    await sas.guarded(self.verifier, event)
                elif isinstance(event, dict) and event.get("type") == "m.room.encrypted":
                    handled = True
                    try:
                        await self._to_device(event)
                    except OlmSessionError as exc:  # no Olm session opens it: wedged?
                        log.warning("matrix_to_device_undecryptable", error=type(exc).__name__)
                        await unwedge.mend(self, event)
                    except (OlmGroupSessionError, ValueError, KeyError) as exc:
                        log.warning("matrix_to_device_undecryptable", error=type(exc).__name__)
        finally:
            # One write for the batch's Olm ratchets and room keys, before the sync
            # position moves past them (a flood of to-device messages costs one rewrite
            # of the store per sync, not one per message).
            if handled:
                await self.store.save()
        if handled and self.backup is not None:
            await self.backup.upload()
        if self.verifier is not None:
            await self.verifier.confirmations()
        counts = batch.get("device_one_time_keys_count")
        if isinstance(counts, dict):
            await self.top_up(counts)
        await self._rotate_on_departures(batch)

    async def _rotate_on_departures(self, batch: JSON) -> None:
        """A member who left (or was kicked or banned) must not read what comes next:
        the room's outbound session is dropped, and the next message starts a new one,
        shared only with who is still there (as Element does)."""
        rotated = False
        for room_id, room in rooms_in(batch, "join"):
            if room_id not in self.store.outbound:
                continue
            if any(_departure(event) for event in events_in(room, "state", "timeline")):
                self.store.drop_outbound(room_id)
                rotated = True
                log.info("matrix_room_key_rotated", room=room_id, reason="member_left")
        if rotated:
            await self.store.save()

    # -- receiving -----------------------------------------------------------------------

    async def _to_device(self, event: JSON) -> None:
        content = event.get("content")
        if not isinstance(content, dict) or content.get("algorithm") != OLM:
            return
        sender, sender_key = event.get("sender"), content.get("sender_key")
        ciphertext = content.get("ciphertext")
        mine = ciphertext.get(self.identity["curve25519"]) if isinstance(ciphertext, dict) else None
        if (
            not isinstance(sender, str)
            or not isinstance(sender_key, str)
            or not isinstance(mine, dict)
        ):
            return
        plaintext = await self._olm_decrypt(sender_key, mine.get("type"), str(mine.get("body")))
        payload = json.loads(plaintext)
        recipient_keys = payload.get("recipient_keys")
        if (
            payload.get("sender") != sender
            or payload.get("recipient") != self.user_id
            or not isinstance(recipient_keys, dict)
            or recipient_keys.get("ed25519") != self.identity["ed25519"]
        ):
            log.warning("matrix_to_device_misaddressed", sender=sender)
            return
        if payload.get("type") == "m.room_key":
            keys = payload.get("keys")
            ed25519 = keys.get("ed25519") if isinstance(keys, dict) else None
            await room_keys.room_key(self, sender, (sender_key, ed25519), payload.get("content"))
        elif payload.get("type") == "m.forwarded_room_key":
            await room_keys.forwarded_key(self, sender, sender_key, payload)

    async def _olm_decrypt(self, sender_key: str, kind: object, body: str) -> str:
        sessions = self.store.sessions.get(sender_key, [])
        prekey = OlmPreKeyMessage(body) if kind == 0 else None
        message = prekey if prekey is not None else OlmMessage(body)
        for session in sessions:
            if prekey is not None and not session.matches(prekey, sender_key):
                continue
            try:
                plaintext: str = session.decrypt(message)
            except OlmSessionError:
                continue
            self.store.session_used(sender_key, session)  # saved at the end of the batch
            return plaintext
        if prekey is None:
            raise OlmSessionError("no Olm session decrypts this message")
        session = InboundSession(self.store.account, prekey, sender_key)
        self.store.account.remove_one_time_keys(session)
        self.store.account_changed()
        decrypted: str = session.decrypt(message)
        self.store.add_session(sender_key, session)
        return decrypted

    def decrypt(self, room_id: str, event: JSON) -> JSON | None:
        """The event as it was before encryption, or ``None`` if the bot has no key."""
        content = event.get("content")
        if not isinstance(content, dict) or content.get("algorithm") != MEGOLM:
            return None
        session = self.store.inbound.get(f"{room_id}|{content.get('session_id')}")
        if session is None:
            return None
        try:
            plaintext, _index = session.decrypt(str(content.get("ciphertext")))
            payload = json.loads(plaintext)
        except (OlmGroupSessionError, ValueError):
            return None
        inner = payload.get("content") if isinstance(payload, dict) else None
        if payload.get("room_id") != room_id or not isinstance(inner, dict):
            return None
        relates = content.get("m.relates_to")
        if isinstance(relates, dict) and "m.relates_to" not in inner:
            inner = {**inner, "m.relates_to": relates}
        return {**event, "type": payload.get("type"), "content": inner}

    # -- sending -------------------------------------------------------------------------

    async def encrypt(self, room_id: str, event_type: str, content: JSON) -> JSON:
        """``content`` as an ``m.room.encrypted`` event's content for ``room_id``."""
        outbound = self.store.outbound.get(room_id)
        if outbound is None or (
            outbound.session.message_index >= ROTATE_MESSAGES
            or time.time() - outbound.created > ROTATE_SECONDS
        ):
            outbound = Outbound(OutboundGroupSession(), time.time())
            self.store.set_outbound(room_id, outbound)
            # The bot can read what it sent (an edit's original, a reply's target).
            own = InboundGroupSession(outbound.session.session_key)
            keys = self.identity
            self.store.add_inbound(room_id, own, (keys["curve25519"], keys["ed25519"]))
            if self.backup is not None:
                self.backup.add(Pending(room_id, own, keys["curve25519"], keys["ed25519"]))
        await self._share(room_id, outbound)
        plaintext = json.dumps({"type": event_type, "content": content, "room_id": room_id})
        ciphertext = outbound.session.encrypt(plaintext)
        self.store.outbound_changed(room_id)
        await self.store.save()
        if self.backup is not None:
            await self.backup.upload()
        sealed: JSON = {
            "algorithm": MEGOLM,
            "sender_key": self.identity["curve25519"],
            "ciphertext": ciphertext,
            "session_id": outbound.session.id,
            "device_id": self.device_id,
        }
        if "m.relates_to" in content:
            sealed["m.relates_to"] = content["m.relates_to"]
        return sealed

    async def _share(self, room_id: str, outbound: Outbound) -> None:
        answer = await self.client.call(
            "GET", f"/_matrix/client/v3/rooms/{q(room_id)}/joined_members"
        )
        joined = answer.get("joined")
        members = sorted(joined) if isinstance(joined, dict) else []
        devices = [d for d in await self.devices_of(members) if d.key not in outbound.shared]
        for device in [d for d in devices if d.key in self._unsendable]:
            devices.remove(device)
            if device.key not in self._warned:
                self._warned.add(device.key)
                log.warning(
                    "matrix_device_not_cross_signed",
                    user=device.user_id,
                    device=device.device_id,
                    note="no room keys for it (trust = cross-signed)",
                )
        devices = [d for d in devices if d.curve25519 != self.identity["curve25519"]]
        if not devices:
            return
        await self.open_sessions(devices)
        messages: dict[str, dict[str, JSON]] = {}
        room_key = {
            "algorithm": MEGOLM,
            "room_id": room_id,
            "session_id": outbound.session.id,
            "session_key": outbound.session.session_key,
        }
        for device in devices:
            sealed = self._sealed_for(device, "m.room_key", room_key)
            if sealed is None:
                log.warning("matrix_device_without_session", user=device.user_id)
                continue
            if device.key not in self._warned:
                self._warned.add(device.key)
                log.warning(
                    "matrix_unverified_device",
                    user=device.user_id,
                    device=device.device_id,
                    note="sharing room keys: Element's default trust",
                )
            messages.setdefault(device.user_id, {})[device.device_id] = sealed
        self.store.shared_with(
            room_id,
            {
                d.key
                for d in devices
                if d.user_id in messages and d.device_id in messages[d.user_id]
            },
        )
        # Kept (and, on replicas, fenced) before anything sealed goes out: a stalled
        # owner whose Olm sessions another replica took over sends nothing, so no Olm
        # message key is used twice.
        await self.store.save()
        if messages:
            await self._to_devices(messages)

    async def send_olm(self, device: Device, kind: str, body: JSON) -> bool:
        """``body`` as a ``kind`` event, Olm-encrypted to one device (an Olm session
        opened first where there is none); whether it went."""
        await self.open_sessions([device])
        sealed = self._sealed_for(device, kind, body)
        if sealed is None:
            return False
        await self.store.save()
        await self._to_devices({device.user_id: {device.device_id: sealed}})
        return True

    async def _to_devices(self, messages: dict[str, dict[str, JSON]]) -> None:
        await self.client.call(
            "PUT",
            f"/_matrix/client/v3/sendToDevice/m.room.encrypted/{secrets.token_hex(12)}",
            body={"messages": messages},
        )

    def _sealed_for(self, device: Device, kind: str, body: JSON) -> JSON | None:
        """``body`` as a ``kind`` event Olm-encrypted for ``device`` with its session in
        use (None: the bot has no Olm session with it)."""
        sessions = self.store.sessions.get(device.curve25519)
        if not sessions:
            return None
        payload = {
            "type": kind,
            "content": body,
            "sender": self.user_id,
            "sender_device": self.device_id,
            "keys": {"ed25519": self.identity["ed25519"]},
            "recipient": device.user_id,
            "recipient_keys": {"ed25519": device.ed25519},
        }
        message = sessions[0].encrypt(json.dumps(payload))
        self.store.session_used(device.curve25519, sessions[0])  # saved by the caller
        return {
            "algorithm": OLM,
            "sender_key": self.identity["curve25519"],
            "ciphertext": {
                device.curve25519: {"type": message.message_type, "body": message.ciphertext}
            },
        }

    async def devices_of(self, users: list[str]) -> list[Device]:
        missing = [u for u in users if u not in self._devices]
        if missing:
            answer = await self.client.call(
                "POST",
                "/_matrix/client/v3/keys/query",
                body={"device_keys": {u: [] for u in missing}},
            )
            found = answer.get("device_keys")
            found = found if isinstance(found, dict) else {}
            for user in missing:
                listed = found.get(user)
                devices = valid_devices(user, listed if isinstance(listed, dict) else {})
                self._devices[user] = devices
                if self.trust == "cross-signed" and user != self.user_id:
                    signed = cross_signed(user, answer, devices, self.store)
                    signed += [d for d in devices if d not in signed and verified(self.store, d)]
                    self._unsendable |= {d.key for d in devices if d not in signed}
                    self._unsendable -= {d.key for d in signed}
        return [d for u in users for d in self._devices.get(u, [])]

    def forget_devices(self, user: str) -> None:
        """``user``'s devices read again (and their trust weighed again) when next needed."""
        self._devices.pop(user, None)

    async def open_sessions(self, devices: list[Device], *, fresh: bool = False) -> bool:
        """An Olm session opened with each device that has none (with every one when
        ``fresh``: it is then the one used first); whether any was opened."""
        wanted: dict[str, dict[str, str]] = {}
        for device in devices:
            if fresh or not self.store.sessions.get(device.curve25519):
                wanted.setdefault(device.user_id, {})[device.device_id] = "signed_curve25519"
        if not wanted:
            return False
        opened = False
        answer = await self.client.call(
            "POST", "/_matrix/client/v3/keys/claim", body={"one_time_keys": wanted}
        )
        claimed = answer.get("one_time_keys")
        claimed = claimed if isinstance(claimed, dict) else {}
        for device in devices:
            user = claimed.get(device.user_id)
            keys = user.get(device.device_id) if isinstance(user, dict) else None
            for value in (keys if isinstance(keys, dict) else {}).values():
                if isinstance(value, dict) and signed_by(
                    value, device.user_id, device.device_id, device.ed25519
                ):
                    session = OutboundSession(
                        self.store.account, device.curve25519, str(value.get("key"))
                    )
                    self.store.add_session(device.curve25519, session)
                    opened = True
                    break
            else:
                log.warning("matrix_one_time_key_unavailable", user=device.user_id)
        await self.store.save()
        return opened


def valid_devices(user_id: str, listed: dict[str, Any]) -> list[Device]:
    """The devices in a ``/keys/query`` answer's list whose keys are self-signed."""
    devices: list[Device] = []
    for device_id, keys in listed.items():
        if not isinstance(keys, dict) or keys.get("user_id") != user_id:
            continue
        if keys.get("device_id") != device_id:
            continue
        values = keys.get("keys")
        values = values if isinstance(values, dict) else {}
        curve, ed = values.get(f"curve25519:{device_id}"), values.get(f"ed25519:{device_id}")
        if not isinstance(curve, str) or not isinstance(ed, str):
            continue
        if not signed_by(keys, user_id, device_id, ed):
            log.warning("matrix_device_keys_bad_signature", user=user_id, device=device_id)
            continue
        devices.append(Device(user_id, device_id, curve, ed))
    return devices


def _departure(event: JSON) -> bool:
    content = event.get("content")
    membership = content.get("membership") if isinstance(content, dict) else None
    return event.get("type") == "m.room.member" and membership in {"leave", "ban"}
