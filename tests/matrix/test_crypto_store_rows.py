"""The encryption store's rows, without a homeserver: a save writes only what changed,
a failed save is written by the next one, and a reload gives back what was kept."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from olm.account import Account
from olm.group_session import InboundGroupSession, OutboundGroupSession
from olm.session import OutboundSession

from thalos_bot_matrix import crypto_db
from thalos_bot_matrix.crypto_store import CryptoStore, Outbound

pytestmark = pytest.mark.anyio

USER = "@bot:example.org"  # a server name with a dot: not taken for a file suffix
ROOM = "!room:example.org"


def _written(monkeypatch: pytest.MonkeyPatch) -> list[crypto_db.Rows]:
    seen: list[crypto_db.Rows] = []
    real = crypto_db.write

    def spy(db: sqlite3.Connection, rows: crypto_db.Rows) -> None:
        seen.append(rows)
        real(db, rows)

    monkeypatch.setattr(crypto_db, "write", spy)
    return seen


async def test_a_save_writes_only_the_rows_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CryptoStore.load(tmp_path, USER, "DEVICE")
    for _ in range(50):
        store.add_inbound(ROOM, InboundGroupSession(OutboundGroupSession().session_key))
    await store.save()
    seen = _written(monkeypatch)
    sender = OutboundGroupSession()
    store.add_inbound(ROOM, InboundGroupSession(sender.session_key))
    await store.save()
    await store.save()  # nothing changed: nothing written
    store.close()
    assert len(seen) == 1
    [rows] = seen
    assert [(row[0], row[1]) for row in rows.inbound] == [(ROOM, sender.id)]
    assert not rows.meta, "the account did not change"
    assert (rows.olm, rows.outbound, rows.shared) == ([], [], [])
    assert not rows.clear
    again = CryptoStore.load(tmp_path, USER, "DEVICE")
    assert len(again.inbound) == 51
    message = sender.encrypt("kept")
    assert again.inbound[f"{ROOM}|{sender.id}"].decrypt(message)[0] == "kept"
    again.close()


async def test_a_failed_save_is_written_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CryptoStore.load(tmp_path, USER, "DEVICE")
    real = crypto_db.write
    failures = [sqlite3.OperationalError("database or disk is full")]

    def full_once(db: sqlite3.Connection, rows: crypto_db.Rows) -> None:
        if failures:
            raise failures.pop()
        real(db, rows)

    monkeypatch.setattr(crypto_db, "write", full_once)
    first = InboundGroupSession(OutboundGroupSession().session_key)
    store.add_inbound(ROOM, first)
    with pytest.raises(sqlite3.OperationalError):
        await store.save()
    second = InboundGroupSession(OutboundGroupSession().session_key)
    store.add_inbound(ROOM, second)
    await store.save()
    store.close()
    again = CryptoStore.load(tmp_path, USER, "DEVICE")
    assert set(again.inbound) == {f"{ROOM}|{first.id}", f"{ROOM}|{second.id}"}
    again.close()


async def test_olm_sessions_outbound_sessions_and_their_devices_come_back(
    tmp_path: Path,
) -> None:
    store = CryptoStore.load(tmp_path, USER, "DEVICE")
    other = Account()
    other.generate_one_time_keys(2)
    curve = other.identity_keys["curve25519"]
    older, newer = (
        OutboundSession(store.account, curve, key)
        for key in other.one_time_keys["curve25519"].values()
    )
    store.add_session(curve, older)
    store.add_session(curve, newer)
    store.set_outbound(ROOM, Outbound(OutboundGroupSession(), 12.5))
    store.shared_with(ROOM, {"@alice:example.org|PHONE"})
    await store.save()
    older.encrypt("moves the ratchet")
    store.session_used(curve, older)
    await store.save()
    # A new outbound session for the room: who had the last one's key is forgotten.
    replaced = OutboundGroupSession()
    store.set_outbound(ROOM, Outbound(replaced, 13.0))
    store.shared_with(ROOM, {"@bob:example.org|LAPTOP"})
    await store.save()
    identity = store.account.identity_keys
    store.close()
    again = CryptoStore.load(tmp_path, USER, "DEVICE")
    assert again.account.identity_keys == identity
    assert [s.id for s in again.sessions[curve]] == [newer.id, older.id], "newest first"
    assert again.outbound[ROOM].session.id == replaced.id
    assert again.outbound[ROOM].created == 13.0
    assert again.outbound[ROOM].shared == {"@bob:example.org|LAPTOP"}
    again.close()


async def test_another_device_gets_a_new_account_and_nothing_of_the_old_one(
    tmp_path: Path,
) -> None:
    store = CryptoStore.load(tmp_path, USER, "OLD")
    store.add_inbound(ROOM, InboundGroupSession(OutboundGroupSession().session_key))
    await store.save()
    old = store.account.identity_keys
    store.close()
    fresh = CryptoStore.load(tmp_path, USER, "NEW")
    assert fresh.account.identity_keys != old
    assert not fresh.inbound
    fresh.close()
    again = CryptoStore.load(tmp_path, USER, "NEW")
    assert again.account.identity_keys == fresh.account.identity_keys
    again.close()


def test_an_old_store_of_another_device_is_not_moved_in(tmp_path: Path) -> None:
    legacy = tmp_path / "matrix" / "crypto-bot_example.org.json"
    legacy.parent.mkdir()
    account = Account()
    legacy.write_text(
        json.dumps({"user_id": USER, "device_id": "OLD", "account": account.pickle("").decode()})
    )
    store = CryptoStore.load(tmp_path, USER, "NEW")
    assert store.account.identity_keys != account.identity_keys
    assert not legacy.exists()
    store.close()
