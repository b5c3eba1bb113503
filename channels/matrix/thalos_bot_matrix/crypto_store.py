"""The end-to-end encryption store: one private file (0600) in the state folder.

It holds the device's Olm account (its identity keys and unpublished one-time keys),
the Olm sessions with other devices, the Megolm sessions the bot can decrypt with, and
the Megolm session it encrypts each room with (and which devices already have its key),
all as libolm pickles. It is written whole, then renamed over the old file (see
:func:`.state.write_private`), after each change (what a sync's to-device messages
change, once for the batch, before the sync position moves past them), so keys survive
a restart or a kill.
A store made for another device id is not used: a new device gets a new account.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from olm.account import Account
from olm.group_session import InboundGroupSession, OutboundGroupSession
from olm.session import Session

from thalos_bot_matrix.state import _safe, folder, read_json, write_private

# The file is private (0600); the pickles are not wrapped in a second secret that would
# have to sit next to them in the same folder.
PICKLE_KEY = ""


@dataclass
class Outbound:
    """The Megolm session the bot encrypts one room with."""

    session: OutboundGroupSession
    created: float
    shared: set[str] = field(default_factory=set)
    """``user|device`` pairs that were sent its key."""


@dataclass
class CryptoStore:
    path: Path
    user_id: str
    device_id: str
    account: Account
    published: bool = False
    """Whether the device keys were uploaded."""
    sessions: dict[str, list[Session]] = field(default_factory=dict)
    """Olm sessions by the other device's curve25519 key, newest first."""
    inbound: dict[str, InboundGroupSession] = field(default_factory=dict)
    """Megolm sessions by ``room|session_id``."""
    outbound: dict[str, Outbound] = field(default_factory=dict)
    """The bot's own Megolm session per room."""

    @classmethod
    def load(cls, state_dir: Path, user_id: str, device_id: str) -> CryptoStore:
        path = folder(state_dir) / f"crypto-{_safe(user_id)}.json"
        data = read_json(path)
        pickled = data.get("account")
        if (
            data.get("user_id") != user_id
            or data.get("device_id") != device_id
            or not isinstance(pickled, str)
        ):
            return cls(path, user_id, device_id, Account())
        store = cls(
            path,
            user_id,
            device_id,
            Account.from_pickle(pickled.encode(), PICKLE_KEY),
            published=data.get("published") is True,
        )
        for key, pickles in _dict(data.get("sessions")).items():
            store.sessions[key] = [Session.from_pickle(p.encode(), PICKLE_KEY) for p in pickles]
        for key, pickle in _dict(data.get("inbound")).items():
            store.inbound[key] = InboundGroupSession.from_pickle(pickle.encode(), PICKLE_KEY)
        for room, item in _dict(data.get("outbound")).items():
            store.outbound[room] = Outbound(
                OutboundGroupSession.from_pickle(item["pickle"].encode(), PICKLE_KEY),
                float(item["created"]),
                set(item["shared"]),
            )
        return store

    def snapshot(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "device_id": self.device_id,
            "account": self.account.pickle(PICKLE_KEY).decode(),
            "published": self.published,
            "sessions": {
                key: [s.pickle(PICKLE_KEY).decode() for s in sessions]
                for key, sessions in self.sessions.items()
            },
            "inbound": {k: s.pickle(PICKLE_KEY).decode() for k, s in self.inbound.items()},
            "outbound": {
                room: {
                    "pickle": o.session.pickle(PICKLE_KEY).decode(),
                    "created": o.created,
                    "shared": sorted(o.shared),
                }
                for room, o in self.outbound.items()
            },
        }

    async def save(self) -> None:
        await anyio.to_thread.run_sync(write_private, self.path, self.snapshot())


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
