"""Matrix's encryption keys on replicas, on a real PostgreSQL: the rows beside the sync
loop's connection lease (``connection_rows``), sealed with ``THALOS_MATRIX_PICKLE_KEY``
and fenced by the lease's token. A stalled owner is made by ending its lease in the
database (the server's clock is the only one leases read)."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from olm.group_session import InboundGroupSession, OutboundGroupSession

from tests.channels.cli_process import clean_env, command
from tests.cluster.connection_daemons import replica_config
from tests.storage.conftest import PostgresSchema
from thalos_bot.channels.connection_state import ConnectionLostError, RowChange
from thalos_bot.channels.kept import KeptState
from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.cluster.connection_rows import PgConnectionRows
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot_matrix import PICKLE_KEY_ENV, TOKEN_ENV, encryption
from thalos_bot_matrix.client import UnreachableError
from thalos_bot_matrix.crypto import Crypto
from thalos_bot_matrix.crypto_shared import KeysUnreadableError, opened
from thalos_bot_matrix.crypto_store import CryptoStore, Outbound
from thalos_bot_matrix.state import SyncState

pytestmark = pytest.mark.anyio

USER, DEVICE = "@bot:example.org", "BOTDEVICE"
KEY = "0123456789abcdef0123456789abcdef"


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened_db:
        yield opened_db


@pytest.fixture(autouse=True)
def _pickle_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PICKLE_KEY_ENV, KEY)


def rows_of(db: PgDatabase, replica: str) -> tuple[ConnectionLease, PgConnectionRows]:
    lease = ConnectionLease(db, "matrix", replica, 30.0)
    return lease, PgConnectionRows(db, lease)


def run_out(schema: PostgresSchema) -> None:
    schema.sql("UPDATE connection_leases SET expires_at = now() - interval '1 second'")


async def test_a_stalled_owners_rows_are_refused_after_a_takeover(
    db: PgDatabase, postgres_schema: PostgresSchema
) -> None:
    (stalled, old), (standby, new) = rows_of(db, "a"), rows_of(db, "b")
    assert not await old.save_rows(RowChange([("olm", "c", "s", b"0")]))  # not held
    assert await stalled.acquire()
    assert await old.save_rows(RowChange([("olm", "c", "s", b"1"), ("olm", "c", "t", b"1")]))
    run_out(postgres_schema)
    assert await standby.acquire()
    assert sorted(await new.load_rows()) == [("olm", "c", "s", b"1"), ("olm", "c", "t", b"1")]
    assert await new.save_rows(RowChange([("olm", "c", "s", b"2")], drop=[("olm", "x")]))
    assert not await old.save_rows(RowChange([("olm", "c", "s", b"1-late")], clear=True))
    assert sorted(await new.load_rows()) == [("olm", "c", "s", b"2"), ("olm", "c", "t", b"1")]
    assert await new.save_rows(RowChange(drop=[("olm", "c")]))
    assert await new.load_rows() == []


async def test_the_next_owner_has_the_same_device_and_the_old_one_writes_nothing(
    db: PgDatabase, postgres_schema: PostgresSchema, tmp_path: Path
) -> None:
    (stalled, old_rows), (standby, new_rows) = rows_of(db, "a"), rows_of(db, "b")
    assert await stalled.acquire()
    first = await opened(old_rows, tmp_path / "a", USER, DEVICE)
    outbound = OutboundGroupSession()
    first.set_outbound("!room", Outbound(outbound, 1.0))
    first.shared_with("!room", {"@ann:example.org|PHONE"})
    outbound.encrypt("hello")
    first.outbound_changed("!room")
    await first.save()
    raw = b"".join(value for *_, value in await new_rows.load_rows())
    assert first.account.identity_keys["curve25519"].encode() not in raw  # sealed
    assert first.account.pickle("")[:40] not in raw
    run_out(postgres_schema)
    assert await standby.acquire()
    second = await opened(new_rows, tmp_path / "b", USER, DEVICE)
    assert second.account.identity_keys == first.account.identity_keys
    assert second.outbound["!room"].session.message_index == 1
    assert second.outbound["!room"].shared == {"@ann:example.org|PHONE"}
    # The stalled owner wakes and encrypts: its ratchet is not written over the new one's.
    outbound.encrypt("again")
    first.outbound_changed("!room")
    with pytest.raises(ConnectionLostError):
        await first.save()
    third = await opened(new_rows, tmp_path / "b", USER, DEVICE)
    assert third.outbound["!room"].session.message_index == 1


async def test_another_devices_keys_are_refused_not_cleared(
    db: PgDatabase, postgres_schema: PostgresSchema, tmp_path: Path
) -> None:
    """A replica signed in as a device of its own (a password, not the shared token)
    takes the connection over: it is refused with a sentence, and the replicas' device
    keeps its keys (clearing them would show Element a new device at every takeover)."""
    (first, first_rows), (other, other_rows) = rows_of(db, "a"), rows_of(db, "b")
    assert await first.acquire()
    kept = await opened(first_rows, tmp_path / "a", USER, DEVICE)
    before = sorted(await first_rows.load_rows())
    run_out(postgres_schema)
    assert await other.acquire()
    with pytest.raises(ChannelFatalError, match=f"device {DEVICE} of {USER}.*{TOKEN_ENV}"):
        await opened(other_rows, tmp_path / "b", USER, "OTHERDEVICE")
    assert sorted(await other_rows.load_rows()) == before
    again = await opened(other_rows, tmp_path / "b", USER, DEVICE)
    assert again.account.identity_keys == kept.account.identity_keys


async def test_the_state_folder_file_is_moved_in_once(db: PgDatabase, tmp_path: Path) -> None:
    local = await anyio.to_thread.run_sync(CryptoStore.load, tmp_path, USER, DEVICE)
    local.add_inbound("!room", _inbound())
    await local.save()
    keys = local.account.identity_keys
    local.close()
    lease, rows = rows_of(db, "a")
    assert await lease.acquire()
    shared = await opened(rows, tmp_path, USER, DEVICE)
    assert shared.account.identity_keys == keys
    assert list(shared.inbound) == [f"!room|{next(iter(local.inbound.values())).id}"]
    assert not (tmp_path / "matrix" / "crypto-bot_example.org.sqlite3").exists()
    assert (tmp_path / "matrix" / "crypto-bot_example.org.sqlite3.moved").exists()
    again = await opened(rows, tmp_path, USER, DEVICE)
    assert again.account.identity_keys == keys


async def test_another_pickle_key_is_told_and_a_missing_one_refused(
    db: PgDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lease, rows = rows_of(db, "a")
    assert await lease.acquire()
    await opened(rows, tmp_path, USER, DEVICE)
    monkeypatch.setenv(PICKLE_KEY_ENV, "another key, not the one that sealed them")
    with pytest.raises(KeysUnreadableError, match=PICKLE_KEY_ENV):
        await opened(rows, tmp_path, USER, DEVICE)
    monkeypatch.delenv(PICKLE_KEY_ENV)
    with pytest.raises(ChannelFatalError, match=f"set {PICKLE_KEY_ENV} in the environment"):
        await opened(rows, tmp_path, USER, DEVICE)


def _inbound() -> InboundGroupSession:
    return InboundGroupSession(OutboundGroupSession().session_key)


def test_a_replica_without_the_pickle_key_is_refused_at_start_and_doctor_says_so(
    postgres_url: str, tmp_path: Path
) -> None:
    (tmp_path / "bot.toml").write_text(
        replica_config(postgres_url, "matrix")
        + 'homeserver = "http://127.0.0.1:9"\nuser_id = "@bot:example.org"\n'
        + 'allowed_users = ["@ann:example.org"]\nencryption = true\n',
        encoding="utf-8",
    )
    env = clean_env({TOKEN_ENV: "syt_token"})
    env.pop(PICKLE_KEY_ENV, None)
    ran = subprocess.run(
        [*command(), "run"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ran.returncode == 2, ran.stderr[-2000:]
    assert f"error: matrix: set {PICKLE_KEY_ENV} in the environment" in ran.stderr
    assert "Traceback" not in ran.stderr
    doctor = subprocess.run(
        [*command(), "doctor", "--offline"],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert f"✗ {PICKLE_KEY_ENV} is set: not set (needed by channel matrix)" in doctor.stdout
    check = subprocess.run(
        [*command(), "check"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert check.returncode == 2
    assert f"{PICKLE_KEY_ENV} is not set, so `run` would refuse to start" in check.stderr


class NoMembers:
    """A homeserver whose rooms have no other member (no key to share)."""

    async def call(self, method: str, path: str, *, body: object = None) -> dict[str, object]:
        return {"joined": {}}


async def test_a_stalled_owner_sends_nothing_encrypted_once_fenced(
    db: PgDatabase, postgres_schema: PostgresSchema, tmp_path: Path
) -> None:
    (stalled, rows), (standby, _) = rows_of(db, "a"), rows_of(db, "b")
    assert await stalled.acquire()
    client: Any = NoMembers()
    crypto = Crypto(client, await opened(rows, tmp_path, USER, DEVICE))
    state = SyncState(KeptState(tmp_path / "sync.json"), encrypted={"!room"})
    seal = encryption.sealer(crypto, state)
    kind, _content = await seal("!room", "m.room.message", {"body": "before"})
    assert kind == "m.room.encrypted"
    run_out(postgres_schema)
    assert await standby.acquire()
    with pytest.raises(UnreachableError) as refused:  # the engine's "not sent"
        await seal("!room", "m.room.message", {"body": "after the takeover"})
    assert refused.value.maybe_sent is False
