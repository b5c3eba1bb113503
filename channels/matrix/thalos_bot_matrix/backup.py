"""Server-side key backup (``m.megolm_backup.v1.curve25519-aes-sha2``).

The backup key is a curve25519 key pair: its public half, signed by the device and the
account's master key, names the backup version on the homeserver; its private half is
kept in the store and in secret storage (``m.megolm_backup.v1``) beside the
cross-signing seeds, so the recovery key opens it on a new state folder too.

- **Up.** Each room key the bot keeps (a member's, or its own for a room it writes to)
  is encrypted to the public key (libolm's PK encryption) and uploaded after the sync
  that brought it, in one request per sync; what fails is tried again after the next.
- **Down.** A restore (:func:`restore`) downloads every room key of the version and
  imports them, so a new state folder reads the history it had access to.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import structlog
from olm import pk
from olm.group_session import InboundGroupSession
from olm.pk import PkDecryption, PkEncryption, PkMessage

from thalos_bot_matrix import recovery
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.crypto_store import CryptoStore

log = structlog.get_logger(__name__)

ALGORITHM = "m.megolm_backup.v1.curve25519-aes-sha2"
SECRET = "m.megolm_backup.v1"  # noqa: S105 - the secret's name, not a secret
VERSION = "backup_version"
MEGOLM = "m.megolm.v1.aes-sha2"


class BackupKey(PkDecryption):
    """A backup key from its 32 private bytes (python-olm only makes random ones)."""

    def __new__(cls, private: bytes) -> BackupKey:
        made = super().__new__(cls)
        assert isinstance(made, BackupKey)
        return made

    def __init__(self, private: bytes) -> None:
        ffi, lib = pk.ffi, pk.lib  # type: ignore[attr-defined]
        private_buffer = ffi.new("char[]", private)
        key_length = lib.olm_pk_key_length()
        key_buffer = ffi.new("char[]", key_length)
        ret = lib.olm_pk_key_from_private(
            self._pk_decryption, key_buffer, key_length, private_buffer, len(private)
        )
        self._check_error(ret)
        self.public_key: str = ffi.unpack(key_buffer, key_length).decode()


@dataclass
class Pending:
    room_id: str
    session: InboundGroupSession
    sender_key: str
    ed25519: str


@dataclass
class Backup:
    client: MatrixClient
    version: str
    public_key: str
    pending: list[Pending] = field(default_factory=list)

    def add(self, pending: Pending) -> None:
        self.pending.append(pending)

    async def upload(self) -> None:
        """The room keys kept since the last upload, in one request."""
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        rooms: dict[str, JSON] = {}
        encryption = PkEncryption(self.public_key)
        for item in batch:
            index = item.session.first_known_index
            data = {
                "algorithm": MEGOLM,
                "sender_key": item.sender_key,
                "session_key": item.session.export_session(index),
                "sender_claimed_keys": {"ed25519": item.ed25519},
                "forwarded_key_chain": [],
            }
            sealed = encryption.encrypt(json.dumps(data))
            sessions = rooms.setdefault(item.room_id, {"sessions": {}})["sessions"]
            sessions[str(item.session.id)] = {
                "first_message_index": index,
                "forwarded_count": 0,
                "is_verified": False,
                "session_data": {
                    "ephemeral": sealed.ephemeral_key,
                    "ciphertext": sealed.ciphertext,
                    "mac": sealed.mac,
                },
            }
        try:
            await self.client.call(
                "PUT",
                "/_matrix/client/v3/room_keys/keys",
                body={"rooms": rooms},
                params={"version": self.version},
            )
        except (MatrixError, UnreachableError) as exc:
            self.pending = batch + self.pending  # tried again after the next sync
            log.warning("matrix_key_backup_failed", error=str(exc), keys=len(batch))
            return
        log.debug("matrix_keys_backed_up", keys=len(batch))


async def create(client: MatrixClient, store: CryptoStore, signed: JSON) -> str:
    """A new backup version for ``signed`` (its auth data); its version."""
    answer = await client.call(
        "POST",
        "/_matrix/client/v3/room_keys/version",
        body={"algorithm": ALGORITHM, "auth_data": signed},
    )
    version = str(answer.get("version"))
    store.put_secret(VERSION, version)
    await store.save()
    log.info("matrix_key_backup_created", version=version)
    return version


async def restore(client: MatrixClient, store: CryptoStore, private: bytes) -> int:
    """Every room key of the account's latest backup imported; how many were new."""
    key = BackupKey(private)
    info = await client.call("GET", "/_matrix/client/v3/room_keys/version")
    auth = info.get("auth_data")
    if info.get("algorithm") != ALGORITHM or not isinstance(auth, dict):
        raise ValueError("the account's key backup uses another algorithm")
    if auth.get("public_key") != key.public_key:
        raise ValueError("the account's key backup is not the one this key opens")
    version = str(info.get("version"))
    store.put_secret(VERSION, version)
    answer = await client.call(
        "GET", "/_matrix/client/v3/room_keys/keys", params={"version": version}
    )
    imported = 0
    rooms = answer.get("rooms")
    for room_id, room in (rooms if isinstance(rooms, dict) else {}).items():
        sessions = room.get("sessions") if isinstance(room, dict) else None
        for session_id, item in (sessions if isinstance(sessions, dict) else {}).items():
            if f"{room_id}|{session_id}" in store.inbound:
                continue
            sealed = item.get("session_data") if isinstance(item, dict) else None
            if not isinstance(sealed, dict):
                continue
            message = PkMessage(
                str(sealed.get("ephemeral")), str(sealed.get("mac")), str(sealed.get("ciphertext"))
            )
            data = json.loads(key.decrypt(message))
            session = InboundGroupSession.import_session(str(data.get("session_key")))
            if session.id != session_id:
                continue
            claimed = data.get("sender_claimed_keys")
            ed25519 = claimed.get("ed25519") if isinstance(claimed, dict) else None
            sender = (str(data.get("sender_key") or ""), str(ed25519 or ""))
            store.add_inbound(room_id, session, sender)
            imported += 1
    await store.save()
    log.info("matrix_key_backup_restored", version=version, keys=imported)
    return imported


def new_private() -> bytes:
    return recovery.new_key()
