"""The bot's encryption store files, read from the tests.

:func:`write_legacy`: the store as builds before the SQLite store wrote it (up to commit 22a14de):
one JSON file, ``crypto-<user>.json``, holding the whole store as libolm pickles. Written
here from a store's content exactly as that build's ``CryptoStore.snapshot`` laid it out,
to check that a running deployment's file is moved over on first start."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from thalos_bot_matrix.crypto_store import PICKLE_KEY, CryptoStore


def write_legacy(store: CryptoStore, path: Path) -> None:
    data = {
        "user_id": store.user_id,
        "device_id": store.device_id,
        "account": store.account.pickle(PICKLE_KEY).decode(),
        "published": store.published,
        "sessions": {
            key: [s.pickle(PICKLE_KEY).decode() for s in sessions]
            for key, sessions in store.sessions.items()
        },
        "inbound": {k: s.pickle(PICKLE_KEY).decode() for k, s in store.inbound.items()},
        "outbound": {
            room: {
                "pickle": o.session.pickle(PICKLE_KEY).decode(),
                "created": o.created,
                "shared": sorted(o.shared),
            }
            for room, o in store.outbound.items()
        },
    }
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(data, handle)


def store_file(state_dir: Path, user_id: str, suffix: str) -> Path:
    """The store's file: ``.sqlite3`` now, ``.json`` before."""
    return state_dir / "matrix" / f"crypto-{user_id.lstrip('@').replace(':', '_')}{suffix}"


def kept_keys(state_dir: Path, user_id: str) -> list[tuple[str, str]]:
    """(room id, session id) of every room key in the bot's store."""
    db = sqlite3.connect(store_file(state_dir, user_id, ".sqlite3"))
    try:
        rows = db.execute("SELECT room_id, session_id FROM inbound_group_sessions").fetchall()
    finally:
        db.close()
    return [(str(room), str(session)) for room, session in rows]
