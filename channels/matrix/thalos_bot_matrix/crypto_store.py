"""The end-to-end encryption store: the device's Olm account (its identity keys and
unpublished one-time keys), the Olm sessions with other devices, the Megolm sessions the
bot can decrypt with, and the Megolm session it encrypts each room with (and which
devices already have its key), all as libolm pickles.

They are held in memory, and kept in a private SQLite file (:mod:`.crypto_db`) row by
row (on replicas in the shared store instead, :mod:`.crypto_shared`): what
:class:`~.crypto.Crypto` changes is marked, and :meth:`CryptoStore.save` pickles only
that (small, on the loop) and writes those rows in one transaction in a worker thread,
never the whole store and never on the event loop. It is called after each change (what
a sync's to-device messages change, once for the batch, before the sync position moves
past them), so keys survive a restart or a kill.

A store made for another device id is not used: a new device gets a new account. The
whole-file JSON store of earlier builds (``crypto-<user>.json``) is read on first start,
moved into the database in one transaction and removed, so a running deployment keeps
its device, its Olm sessions and its room keys.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio
from olm.account import Account
from olm.group_session import InboundGroupSession, OutboundGroupSession
from olm.session import Session

from thalos_bot_matrix import crypto_db
from thalos_bot_matrix.state import _safe, folder

# The file is private (0600); the pickles are not wrapped in a second secret that would
# have to sit next to them in the same folder.
PICKLE_KEY = ""


class Keeper(Protocol):
    """Where the rows go on replicas (:class:`~.crypto_shared.SharedKeys`)."""

    async def write(self, batches: list[crypto_db.Rows]) -> None: ...


@dataclass
class Outbound:
    """The Megolm session the bot encrypts one room with."""

    session: OutboundGroupSession
    created: float
    shared: set[str] = field(default_factory=set)
    """``user|device`` pairs that were sent its key."""


@dataclass
class CryptoStore:
    db: sqlite3.Connection | Keeper | None
    user_id: str
    device_id: str
    account: Account
    published: bool = False
    """Whether the device keys were uploaded."""
    sessions: dict[str, list[Session]] = field(default_factory=dict)
    """Olm sessions by the other device's curve25519 key, newest first (read-only here:
    change them through :meth:`add_session` and :meth:`session_used`)."""
    inbound: dict[str, InboundGroupSession] = field(default_factory=dict)
    """Megolm sessions by ``room|session_id`` (add through :meth:`add_inbound`)."""
    senders: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Who sent each of those (its curve25519 key, its claimed ed25519 key; empty when
    the store of an earlier version did not say)."""
    outbound: dict[str, Outbound] = field(default_factory=dict)
    """The bot's own Megolm session per room (through :meth:`set_outbound`)."""

    secrets: dict[str, str] = field(default_factory=dict)
    """The cross-signing keys' seeds and such, by name (through :meth:`put_secret`)."""

    _order: int = 0
    """The order the newest Olm session was added in (they are tried newest first)."""
    _orders: dict[tuple[str, str], int] = field(default_factory=dict)
    _account_dirty: bool = False
    _olm_dirty: dict[tuple[str, str], tuple[Session, int]] = field(default_factory=dict)
    _inbound_dirty: set[str] = field(default_factory=set)
    _outbound_dirty: set[str] = field(default_factory=set)
    _shared_dirty: set[tuple[str, str]] = field(default_factory=set)
    _dropped: set[str] = field(default_factory=set)
    _clear: bool = False
    _secrets_dirty: set[str] = field(default_factory=set)
    _lock: anyio.Lock = field(default_factory=anyio.Lock)
    _unwritten: list[crypto_db.Rows] = field(default_factory=list)
    """Changes a failed save did not write (a full disk): written before the next."""

    # -- changes -------------------------------------------------------------------------

    def account_changed(self) -> None:
        self._account_dirty = True

    def put_secret(self, name: str, value: str) -> None:
        self.secrets[name] = value
        self._secrets_dirty.add(name)

    def add_session(self, curve25519: str, session: Session) -> None:
        self.sessions.setdefault(curve25519, []).insert(0, session)
        self._order += 1
        key = (curve25519, str(session.id))
        self._orders[key] = self._order
        self._olm_dirty[key] = (session, self._order)

    def session_used(self, curve25519: str, session: Session) -> None:
        """An Olm session's ratchet moved (it encrypted or decrypted)."""
        key = (curve25519, str(session.id))
        self._olm_dirty[key] = (session, self._orders.get(key, 0))

    def add_inbound(
        self, room_id: str, session: InboundGroupSession, sender: tuple[str, str] = ("", "")
    ) -> None:
        key = f"{room_id}|{session.id}"
        self.inbound[key] = session
        self.senders[key] = sender
        self._inbound_dirty.add(key)

    def set_outbound(self, room_id: str, outbound: Outbound) -> None:
        self.drop_outbound(room_id)  # who had the last one's key is forgotten with it
        self.outbound[room_id] = outbound
        self.outbound_changed(room_id)

    def outbound_changed(self, room_id: str) -> None:
        """The room's outbound session encrypted (its ratchet moved)."""
        self._outbound_dirty.add(room_id)

    def shared_with(self, room_id: str, devices: set[str]) -> None:
        """The room's outbound key went to these ``user|device`` pairs too."""
        self.outbound[room_id].shared |= devices
        self._shared_dirty |= {(room_id, d) for d in devices}

    def drop_outbound(self, room_id: str) -> None:
        self.outbound.pop(room_id, None)
        self._dropped.add(room_id)
        self._outbound_dirty.discard(room_id)
        self._shared_dirty = {(r, d) for r, d in self._shared_dirty if r != room_id}

    # -- writing -------------------------------------------------------------------------

    def _rows(self) -> crypto_db.Rows:
        rows = crypto_db.Rows(clear=self._clear)
        if self._account_dirty or self._clear:
            rows.meta = {
                "user_id": self.user_id,
                "device_id": self.device_id,
                "account": self.account.pickle(PICKLE_KEY).decode(),
                "published": "1" if self.published else "0",
            }
        rows.meta |= {f"secret:{name}": self.secrets[name] for name in self._secrets_dirty}
        rows.olm = [
            (curve, sid, session.pickle(PICKLE_KEY).decode(), order)
            for (curve, sid), (session, order) in self._olm_dirty.items()
        ]
        for key in self._inbound_dirty:
            room, _, sid = key.rpartition("|")
            pickle = self.inbound[key].pickle(PICKLE_KEY).decode()
            rows.inbound.append((room, sid, pickle, *self.senders.get(key, ("", ""))))
        rows.dropped_outbound = sorted(self._dropped)
        for room in self._outbound_dirty:
            outbound = self.outbound[room]
            pickle = outbound.session.pickle(PICKLE_KEY).decode()
            rows.outbound.append((room, pickle, outbound.created))
        rows.shared = sorted(self._shared_dirty)
        return rows

    def _clean(self) -> None:
        self._account_dirty = self._clear = False
        self._secrets_dirty = set()
        self._olm_dirty = {}
        self._inbound_dirty = set()
        self._outbound_dirty = set()
        self._shared_dirty = set()
        self._dropped = set()

    def write_pending(self) -> None:
        """What changed, written now (blocking: for :meth:`load`, in its thread)."""
        rows = self._rows()
        self._clean()
        if rows and isinstance(self.db, sqlite3.Connection):
            crypto_db.write(self.db, rows)

    async def save(self) -> None:
        """What changed since the last save, written in a worker thread."""
        rows = self._rows()
        self._clean()
        if self.db is None:
            return
        db = self.db
        async with self._lock:  # one transaction at a time, in the order they were made
            batches = [*self._unwritten, rows] if rows else self._unwritten
            if not batches:
                return
            try:
                if isinstance(db, sqlite3.Connection):
                    await anyio.to_thread.run_sync(_write_all, db, batches)
                else:
                    await db.write(batches)
            except BaseException:
                self._unwritten = batches  # tried again, first, by the next save
                raise
            self._unwritten = []

    def close(self) -> None:
        if isinstance(self.db, sqlite3.Connection):
            self.db.close()
        self.db = None

    # -- reading -------------------------------------------------------------------------

    @classmethod
    def load(cls, state_dir: Path, user_id: str, device_id: str) -> CryptoStore:
        """The store for this device (blocking: called in a worker thread)."""
        path = store_path(state_dir, user_id)
        legacy = path.with_name(path.name.removesuffix(".sqlite3") + ".json")
        db = crypto_db.connect(path)
        try:
            store = cls._read(db, user_id, device_id)
            if store is None and legacy.exists():
                store = _from_legacy(db, legacy, user_id, device_id)
            if store is None:
                store = cls(db, user_id, device_id, Account(), _clear=True)
                store.write_pending()
        except BaseException:
            db.close()
            raise
        if legacy.exists():
            legacy.unlink()  # moved (or of another device): its keys are not kept twice
        return store

    @classmethod
    def _read(cls, db: sqlite3.Connection, user_id: str, device_id: str) -> CryptoStore | None:
        return cls.of(db, crypto_db.read(db), user_id, device_id)

    @classmethod
    def of(
        cls, db: sqlite3.Connection | Keeper, loaded: crypto_db.Loaded, user_id: str, device_id: str
    ) -> CryptoStore | None:
        """The store ``loaded`` holds, when it was made for this device (blocking)."""
        meta = loaded.meta
        if meta.get("user_id") != user_id or meta.get("device_id") != device_id:
            return None
        store = cls(
            db,
            user_id,
            device_id,
            Account.from_pickle(meta["account"].encode(), PICKLE_KEY),
            published=meta.get("published") == "1",
            secrets={k[len("secret:") :]: v for k, v in meta.items() if k.startswith("secret:")},
        )
        for curve, sid, pickle, order in loaded.olm:  # newest first
            store.sessions.setdefault(curve, []).append(
                Session.from_pickle(pickle.encode(), PICKLE_KEY)
            )
            store._orders[(curve, sid)] = order
            store._order = max(store._order, order)
        for room, sid, pickle, sender_key, ed25519 in loaded.inbound:
            store.senders[f"{room}|{sid}"] = (sender_key, ed25519)
            store.inbound[f"{room}|{sid}"] = InboundGroupSession.from_pickle(
                pickle.encode(), PICKLE_KEY
            )
        for room, pickle, created in loaded.outbound:
            session = OutboundGroupSession.from_pickle(pickle.encode(), PICKLE_KEY)
            store.outbound[room] = Outbound(session, created)
        for room, device in loaded.shared:
            if room in store.outbound:
                store.outbound[room].shared.add(device)
        return store


def store_path(state_dir: Path, user_id: str) -> Path:
    # Not with_suffix: a server name's dots would be taken for one.
    return folder(state_dir) / f"crypto-{_safe(user_id)}.sqlite3"


def _from_legacy(
    db: sqlite3.Connection, path: Path, user_id: str, device_id: str
) -> CryptoStore | None:
    """The whole-file JSON store at ``path``, moved into ``db`` (``None``: it was made
    for another device, or holds no account). A file whose pickles cannot be read back
    raises, and nothing is moved."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pickled = data.get("account")
    if data.get("user_id") != user_id or data.get("device_id") != device_id:
        return None
    if not isinstance(pickled, str):
        return None
    store = CryptoStore(
        db,
        user_id,
        device_id,
        Account.from_pickle(pickled.encode(), PICKLE_KEY),
        published=data.get("published") is True,
        _clear=True,
    )
    for curve, pickles in _dict(data.get("sessions")).items():
        for pickle in reversed(pickles):  # newest first in the file
            store.add_session(curve, Session.from_pickle(pickle.encode(), PICKLE_KEY))
    for key, pickle in _dict(data.get("inbound")).items():
        room, _, _sid = key.rpartition("|")
        store.add_inbound(room, InboundGroupSession.from_pickle(pickle.encode(), PICKLE_KEY))
    for room, item in _dict(data.get("outbound")).items():
        session = OutboundGroupSession.from_pickle(item["pickle"].encode(), PICKLE_KEY)
        store.outbound[room] = Outbound(session, float(item["created"]))
        store.outbound_changed(room)
        store.shared_with(room, set(item["shared"]))
    store.write_pending()
    return store


def _write_all(db: sqlite3.Connection, batches: list[crypto_db.Rows]) -> None:
    for rows in batches:
        crypto_db.write(db, rows)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
