"""A person whose client encrypts, as Element does: its own Olm device (python-olm, on
libolm), written for the tests apart from the bot's code, speaking plain HTTP.

- Its device keys and signed one-time keys are uploaded before it talks.
- :meth:`EncryptingHuman.say_encrypted` Megolm-encrypts a message; the first time in a
  room (or after :meth:`rotate`) it checks the bot device's self-signature, claims a
  signed one-time key, opens an Olm session and sends the room key to that device.
- Every sync's to-device events are Olm-decrypted (the bot's room keys) and the room's
  ``m.room.encrypted`` events are shown decrypted, with the cleartext ``m.relates_to``
  put back, so ``shown()`` and ``bodies()`` read the room as Element shows it. A payload
  addressed to someone else, or for another room, fails the test.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field

from olm.account import Account as OlmAccount
from olm.group_session import InboundGroupSession, OutboundGroupSession
from olm.session import InboundSession, OlmMessage, OlmPreKeyMessage, OutboundSession, Session
from olm.utility import ed25519_verify

from tests.matrix.human import JSON, Human

OLM = "m.olm.v1.curve25519-aes-sha2"
MEGOLM = "m.megolm.v1.aes-sha2"


def _signable(value: JSON) -> str:
    rest = {k: v for k, v in value.items() if k not in ("signatures", "unsigned")}
    return json.dumps(rest, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


@dataclass
class EncryptingHuman(Human):
    olm: OlmAccount = field(default_factory=OlmAccount)
    olm_sessions: dict[str, list[Session]] = field(default_factory=dict)
    group_in: dict[str, InboundGroupSession] = field(default_factory=dict)
    group_out: dict[str, OutboundGroupSession] = field(default_factory=dict)
    first_keys: dict[str, str] = field(default_factory=dict)
    """Each outbound session's key at its first message, by session id."""
    only_cross_signed: bool = False
    """Send room keys only to devices their owner cross-signed (Element's coming
    default, MSC4153): a device that is not fails the test."""
    key_requests: list[JSON] = field(default_factory=list)
    """``m.room_key_request`` events received (sender and content)."""
    to_device_plain: list[JSON] = field(default_factory=list)
    """Every other to-device event that came in the clear (verification steps)."""
    to_device_types: list[str] = field(default_factory=list)
    """The type of every Olm-decrypted to-device payload, in order (``m.dummy`` too)."""
    forwarded: dict[str, JSON] = field(default_factory=dict)
    """``m.forwarded_room_key`` contents received, by ``room|session_id``."""

    def _signed(self, value: JSON) -> JSON:
        signature = self.olm.sign(_signable(value))
        device = f"ed25519:{self.account.device_id}"
        return {**value, "signatures": {self.user_id: {device: signature}}}

    async def upload_keys(self) -> None:
        identity = self.olm.identity_keys
        device = self.account.device_id
        self.olm.generate_one_time_keys(5)
        one_time = {
            f"signed_curve25519:{key_id}": self._signed({"key": key})
            for key_id, key in self.olm.one_time_keys["curve25519"].items()
        }
        device_keys = self._signed(
            {
                "user_id": self.user_id,
                "device_id": device,
                "algorithms": [OLM, MEGOLM],
                "keys": {
                    f"curve25519:{device}": identity["curve25519"],
                    f"ed25519:{device}": identity["ed25519"],
                },
            }
        )
        await self.call(
            "POST",
            "/_matrix/client/v3/keys/upload",
            {"device_keys": device_keys, "one_time_keys": one_time},
        )
        self.olm.mark_keys_as_published()

    # -- sending -------------------------------------------------------------------------

    async def bot_device(self, bot: str) -> tuple[str, str, str]:
        """The bot's one device: its id, curve25519 and ed25519 keys (self-signature
        checked)."""
        found = await self.call("POST", "/_matrix/client/v3/keys/query", {"device_keys": {bot: []}})
        devices = found["device_keys"][bot]
        assert len(devices) == 1, devices
        [(device_id, keys)] = devices.items()
        ed = keys["keys"][f"ed25519:{device_id}"]
        ed25519_verify(ed, _signable(keys), keys["signatures"][bot][f"ed25519:{device_id}"])
        assert keys["algorithms"] == [OLM, MEGOLM]
        if self.only_cross_signed:
            _cross_signed(found, bot, keys)
        return device_id, keys["keys"][f"curve25519:{device_id}"], ed

    async def request_key(
        self, room_id: str, session_id: str, sender_key: str, bot: str, device_id: str
    ) -> None:
        """Ask the bot's device for a room key (``m.room_key_request``, in the clear)."""
        content = {
            "action": "request",
            "body": {
                "algorithm": MEGOLM,
                "room_id": room_id,
                "session_id": session_id,
                "sender_key": sender_key,
            },
            "request_id": secrets.token_hex(8),
            "requesting_device_id": self.account.device_id,
        }
        await self.call(
            "PUT",
            f"/_matrix/client/v3/sendToDevice/m.room_key_request/{secrets.token_hex(8)}",
            {"messages": {bot: {device_id: content}}},
        )

    def rotate(self, room_id: str) -> None:
        self.group_out.pop(room_id, None)

    async def _share(
        self, room_id: str, bot: str, *, withhold: bool = False
    ) -> OutboundGroupSession:
        session = self.group_out.get(room_id)
        if session is not None:
            return session
        session = OutboundGroupSession()
        self.group_out[room_id] = session
        self.group_in[f"{room_id}|{session.id}"] = InboundGroupSession(session.session_key)
        self.first_keys[session.id] = session.session_key
        if not withhold:
            await self.send_room_key(room_id, bot)
        return session

    async def send_room_key(self, room_id: str, bot: str) -> None:
        """The room's current outbound session to the bot's device (``m.room_key``), from
        its first message on (sent late, it still opens what went before)."""
        session = self.group_out[room_id]
        content = {
            "algorithm": MEGOLM,
            "room_id": room_id,
            "session_id": session.id,
            "session_key": self.first_keys[session.id],
        }
        await self.send_olm(bot, "m.room_key", content)

    async def forward_key(self, room_id: str, bot: str) -> None:
        """The room's current session to the bot as ``m.forwarded_room_key`` (what
        Element sends in answer to a key request), exported from its first index."""
        session = self.group_in[f"{room_id}|{self.group_out[room_id].id}"]
        content = {
            "algorithm": MEGOLM,
            "room_id": room_id,
            "session_id": session.id,
            "session_key": session.export_session(session.first_known_index),
            "sender_key": self.olm.identity_keys["curve25519"],
            "sender_claimed_ed25519_key": self.olm.identity_keys["ed25519"],
            "forwarding_curve25519_key_chain": [],
        }
        await self.send_olm(bot, "m.forwarded_room_key", content)

    async def send_olm(self, bot: str, kind: str, content: JSON) -> None:
        """``content`` as a ``kind`` event, Olm-encrypted to the bot's device (an Olm
        session opened with a claimed one-time key the first time)."""
        device_id, curve, ed = await self.bot_device(bot)
        sessions = self.olm_sessions.setdefault(curve, [])
        if not sessions:
            claimed = await self.call(
                "POST",
                "/_matrix/client/v3/keys/claim",
                {"one_time_keys": {bot: {device_id: "signed_curve25519"}}},
            )
            [(key_id, one_time)] = claimed["one_time_keys"][bot][device_id].items()
            assert key_id.startswith("signed_curve25519:")
            ed25519_verify(
                ed, _signable(one_time), one_time["signatures"][bot][f"ed25519:{device_id}"]
            )
            sessions.append(OutboundSession(self.olm, curve, one_time["key"]))
        payload = {
            "type": kind,
            "content": content,
            "sender": self.user_id,
            "sender_device": self.account.device_id,
            "keys": {"ed25519": self.olm.identity_keys["ed25519"]},
            "recipient": bot,
            "recipient_keys": {"ed25519": ed},
        }
        message = sessions[0].encrypt(json.dumps(payload))
        sealed = {
            "algorithm": OLM,
            "sender_key": self.olm.identity_keys["curve25519"],
            "ciphertext": {curve: {"type": message.message_type, "body": message.ciphertext}},
        }
        await self.call(
            "PUT",
            f"/_matrix/client/v3/sendToDevice/m.room.encrypted/{secrets.token_hex(8)}",
            {"messages": {bot: {device_id: sealed}}},
        )

    async def share_key(self, room_id: str, bot: str) -> str:
        """Send the bot a room key for ``room_id`` (whether or not this person is in
        it); return the session's id."""
        session = await self._share(room_id, bot)
        return str(session.id)

    async def say_encrypted(
        self, room_id: str, bot: str, body: str, *, withhold: bool = False
    ) -> str:
        message = {"msgtype": "m.text", "body": body}
        return await self.send_encrypted(room_id, bot, message, withhold=withhold)

    async def send_encrypted(
        self,
        room_id: str,
        bot: str,
        message: JSON,
        *,
        withhold: bool = False,
        kind: str = "m.room.message",
    ) -> str:
        """A ``kind`` event with ``message`` as its content, Megolm-encrypted (a new
        session's key not sent to the bot when ``withhold``)."""
        session = await self._share(room_id, bot, withhold=withhold)
        plaintext = {"type": kind, "content": message, "room_id": room_id}
        content = {
            "algorithm": MEGOLM,
            "sender_key": self.olm.identity_keys["curve25519"],
            "ciphertext": session.encrypt(json.dumps(plaintext)),
            "session_id": session.id,
            "device_id": self.account.device_id,
        }
        return await self.send(room_id, content, "m.room.encrypted")

    # -- receiving -----------------------------------------------------------------------

    def _take(self, data: JSON) -> None:
        for event in data.get("to_device", {}).get("events", []):
            if event["type"] == "m.room.encrypted":
                self._to_device(event)
            elif event["type"] == "m.room_key_request":
                self.key_requests.append(event)
            else:
                self.to_device_plain.append(event)
        super()._take(data)
        for room_id, events in self.events.items():
            for index, event in enumerate(events):
                if event["type"] == "m.room.encrypted":
                    decrypted = self._decrypt(room_id, event)
                    if decrypted is not None:
                        events[index] = decrypted

    def _to_device(self, event: JSON) -> None:
        content = event["content"]
        assert content["algorithm"] == OLM, content
        mine = content["ciphertext"][self.olm.identity_keys["curve25519"]]
        sender_key = content["sender_key"]
        sessions = self.olm_sessions.setdefault(sender_key, [])
        plaintext = None
        if mine["type"] == 0:
            prekey = OlmPreKeyMessage(mine["body"])
            for session in sessions:
                if session.matches(prekey, sender_key):
                    plaintext = session.decrypt(prekey)
                    break
            else:
                session = InboundSession(self.olm, prekey, sender_key)
                self.olm.remove_one_time_keys(session)
                sessions.insert(0, session)
                plaintext = session.decrypt(prekey)
        else:
            for session in sessions:
                try:
                    plaintext = session.decrypt(OlmMessage(mine["body"]))
                    break
                except Exception:
                    continue
        assert plaintext is not None, "an Olm message no session decrypts"
        payload = json.loads(plaintext)
        assert payload["recipient"] == self.user_id
        assert payload["recipient_keys"]["ed25519"] == self.olm.identity_keys["ed25519"]
        assert payload["sender"] == event["sender"]
        self.to_device_types.append(payload["type"])
        if payload["type"] == "m.room_key":
            key = payload["content"]
            assert key["algorithm"] == MEGOLM
            group = InboundGroupSession(key["session_key"])
            assert group.id == key["session_id"]
            self.group_in[f"{key['room_id']}|{key['session_id']}"] = group
        elif payload["type"] == "m.forwarded_room_key":
            key = payload["content"]
            assert key["algorithm"] == MEGOLM
            group = InboundGroupSession.import_session(key["session_key"])
            assert group.id == key["session_id"]
            self.forwarded[f"{key['room_id']}|{key['session_id']}"] = key
            self.group_in[f"{key['room_id']}|{key['session_id']}"] = group

    def _decrypt(self, room_id: str, event: JSON) -> JSON | None:
        content = event["content"]
        session = self.group_in.get(f"{room_id}|{content.get('session_id')}")
        if session is None:
            return None
        plaintext, _index = session.decrypt(content["ciphertext"])
        payload = json.loads(plaintext)
        assert payload["room_id"] == room_id
        inner = dict(payload["content"])
        if "m.relates_to" in content:
            assert inner.get("m.relates_to", content["m.relates_to"]) == content["m.relates_to"]
            inner["m.relates_to"] = content["m.relates_to"]
        return {
            **event,
            "type": payload["type"],
            "content": inner,
            "encrypted": True,
            "session_id": content["session_id"],
        }


def _cross_signed(found: JSON, user: str, device: JSON) -> None:
    """Raise unless ``device`` is signed by ``user``'s self-signing key, itself signed by
    the user's master key (which a real client would also pin or verify)."""
    master = found.get("master_keys", {}).get(user)
    self_signing = found.get("self_signing_keys", {}).get(user)
    if master is None or self_signing is None:
        raise AssertionError(f"{user} has no cross-signing keys: no room key for it")
    [master_key] = master["keys"].values()
    [ssk] = self_signing["keys"].values()
    signatures = self_signing["signatures"][user]
    ed25519_verify(master_key, _signable(self_signing), signatures[f"ed25519:{master_key}"])
    by_ssk = device.get("signatures", {}).get(user, {}).get(f"ed25519:{ssk}")
    if by_ssk is None:
        raise AssertionError(f"{user}'s device is not cross-signed: no room key for it")
    ed25519_verify(ssk, _signable(device), by_ssk)
