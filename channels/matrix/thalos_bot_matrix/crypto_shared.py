"""The encryption store on replicas (a ``postgresql://`` store): its rows kept in the
shared store beside the sync loop's connection lease (the kit's
:class:`~thalos_bot.channels.connection_state.ConnectionRows`), so the replica that
takes the sync loop over goes on with the same device keys, Olm sessions and Megolm
ratchets. Row by row as in the state folder's file (:mod:`.crypto_db`): a kind, a group
(the other device's key, the room), a name (the session's id).

Every value is sealed before it leaves the process (secret storage's AES-CTR and
HMAC-SHA-256 under keys derived for the row's own kind, group and name, so a value
cannot be moved to another row) with a key made by scrypt from
``THALOS_MATRIX_PICKLE_KEY``. Every write is fenced by the lease's token: an owner
that stalled past its lease has its writes refused (:class:`ConnectionLostError`), and so
never encrypts with a ratchet the new owner also holds.

The first owner on an empty shared store moves this state folder's file in, once, when
it holds keys of the same device (the file is then renamed ``….moved``).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import structlog
from olm.account import Account

from thalos_bot.channels.connection_state import ConnectionLostError, ConnectionRows, Row, RowChange
from thalos_bot.channels.ports import EXIT_CONFIG, ChannelFatalError
from thalos_bot.telemetry.redact import register_secret
from thalos_bot_matrix import PICKLE_KEY_ENV, TOKEN_ENV, crypto_db, recovery
from thalos_bot_matrix.crypto_store import CryptoStore, store_path

log = structlog.get_logger(__name__)


class KeysUnreadableError(ValueError):
    """The shared store's keys do not open with this replica's pickle key."""


def pickle_key() -> bytes:
    """The sealing key (blocking: scrypt); ChannelFatalError when the variable is unset."""
    secret = os.environ.get(PICKLE_KEY_ENV, "")
    if not secret.strip():
        raise ChannelFatalError(
            f"matrix: set {PICKLE_KEY_ENV} in the environment, the same on every replica: "
            "with encryption = true on a postgresql:// store the device's keys are kept in "
            "the shared store, sealed with it (e.g. openssl rand -hex 32)",
            EXIT_CONFIG,
        )
    register_secret(secret)
    return hashlib.scrypt(secret.encode(), salt=b"thalos-bot matrix keys", n=2**14, r=8, p=1)[:32]


@dataclass
class SharedKeys:
    """:class:`~.crypto_store.Keeper` over the kit's fenced rows."""

    rows: ConnectionRows
    key: bytes

    async def write(self, batches: list[crypto_db.Rows]) -> None:
        for rows in batches:  # each in one transaction, in order, as in the file
            change = await anyio.to_thread.run_sync(self._change, rows)
            if not await self.rows.save_rows(change):
                raise ConnectionLostError("matrix: another replica holds the sync loop")

    async def read(self) -> crypto_db.Loaded:
        return await anyio.to_thread.run_sync(self._loaded, await self.rows.load_rows())

    def _seal(self, kind: str, group: str, name: str, value: Any) -> Row:
        data = recovery.storage_key(self.key).encrypt(f"{kind}|{group}|{name}", json.dumps(value))
        return kind, group, name, f"{data.iv}.{data.mac}.{data.ciphertext}".encode()

    def _open(self, row: Row) -> Any:
        from mautrix.crypto.ssss.types import EncryptedKeyData

        kind, group, name, value = row
        try:
            iv, mac, ciphertext = value.decode().split(".")
            key = recovery.storage_key(self.key)
            plain = key.decrypt(f"{kind}|{group}|{name}", EncryptedKeyData(ciphertext, iv, mac))
        except ValueError:
            raise KeysUnreadableError(
                f"the device's keys in the shared store do not open with {PICKLE_KEY_ENV} "
                "(another key sealed them)"
            ) from None
        return json.loads(plain)

    def _change(self, rows: crypto_db.Rows) -> RowChange:
        seal = self._seal
        put = [seal("meta", "", name, value) for name, value in rows.meta.items()]
        put += [seal("olm", curve, sid, [pickle, n]) for curve, sid, pickle, n in rows.olm]
        put += [seal("inbound", room, sid, rest) for room, sid, *rest in rows.inbound]
        put += [seal("outbound", room, "", [p, created]) for room, p, created in rows.outbound]
        put += [seal("shared", room, device, 1) for room, device in rows.shared]
        drop = [(kind, room) for room in rows.dropped_outbound for kind in ("outbound", "shared")]
        return RowChange(put, drop, rows.clear)

    def _loaded(self, rows: list[Row]) -> crypto_db.Loaded:
        loaded = crypto_db.Loaded({}, [], [], [], [])
        for row in rows:
            kind, group, name, _ = row
            value = self._open(row)
            if kind == "meta":
                loaded.meta[name] = value
            elif kind == "olm":
                loaded.olm.append((group, name, value[0], value[1]))
            elif kind == "inbound":
                loaded.inbound.append((group, name, *value))
            elif kind == "outbound":
                loaded.outbound.append((group, value[0], value[1]))
            elif kind == "shared":
                loaded.shared.append((group, name))
        loaded.olm.sort(key=lambda olm: -olm[3])  # newest first, as the file reads them
        return loaded


FORGET_KEYS = "DELETE FROM connection_rows WHERE channel_id = 'matrix'"
"""What an operator runs to let the replicas' device start again with new keys."""


async def opened(
    rows: ConnectionRows, state_dir: Path, user_id: str, device_id: str
) -> CryptoStore:
    """The device's store as the sync loop's last owner kept it; else (nothing shared
    yet) this state folder's, moved in; else a new account."""
    shared = SharedKeys(rows, await anyio.to_thread.run_sync(pickle_key))
    loaded = await shared.read()
    store = await anyio.to_thread.run_sync(CryptoStore.of, shared, loaded, user_id, device_id)
    if store is None and loaded.meta:
        # Another device's keys: this replica signed in on its own (a password, not
        # the shared token); clearing them would cost the others their identity.
        raise ChannelFatalError(
            f"the replicas' shared Matrix encryption keys belong to device"
            f" {loaded.meta.get('device_id')} of {loaded.meta.get('user_id')}, not to this"
            f" replica's {device_id} of {user_id}: give every replica the same access token"
            f" ({TOKEN_ENV}), so they are one device; to start again with new keys"
            f" (Element then sees a new device), delete the old ones first: {FORGET_KEYS}",
            EXIT_CONFIG,
        )
    if store is None:
        store = await _moved_in(shared, store_path(state_dir, user_id), user_id, device_id)
    if store is None:
        store = CryptoStore(shared, user_id, device_id, Account(), _clear=True)
        await store.save()
    return store


async def _moved_in(
    shared: SharedKeys, path: Path, user_id: str, device_id: str
) -> CryptoStore | None:
    local = await anyio.to_thread.run_sync(_read_file, path)
    if local is None:
        return None
    store = await anyio.to_thread.run_sync(CryptoStore.of, shared, local, user_id, device_id)
    if store is None:
        return None
    every = crypto_db.Rows(local.meta, local.olm, local.inbound, local.outbound, local.shared)
    every.clear = True
    await shared.write([every])
    await anyio.to_thread.run_sync(path.replace, path.with_name(path.name + ".moved"))
    log.info("matrix_keys_moved_to_shared_store", file=path.name, inbound=len(local.inbound))
    return store


def _read_file(path: Path) -> crypto_db.Loaded | None:
    if not path.exists():
        return None
    db = crypto_db.connect(path)
    try:
        return crypto_db.read(db)
    finally:
        db.close()
