"""The web page's logins in the shared store, on a real PostgreSQL: one signing secret
for every replica, a logout every replica reads, a login code taken once by whichever
replica gets it (an expired one by none), and a cookie signed on one replica read by
another's :class:`Sessions`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from thalos_bot.cluster.web_logins import PgLogins
from thalos_bot.service.schema import PG_ALL_MIGRATIONS
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot_web.pairing import LoginCodes
from thalos_bot_web.sessions import Logouts, Sessions, follow_logouts, signing_secret

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(postgres_url: str) -> AsyncIterator[PgDatabase]:
    async with await PgDatabase.open(postgres_url, migrations=PG_ALL_MIGRATIONS) as opened:
        yield opened


async def test_every_replica_signs_with_the_first_secret(db: PgDatabase) -> None:
    first = await PgLogins(db).secret(b"a" * 32)
    assert first == b"a" * 32
    assert await PgLogins(db).secret(b"b" * 32) == first
    assert await signing_secret(PgLogins(db)) == first


async def test_a_code_is_taken_once_by_any_replica(db: PgDatabase) -> None:
    issued = await LoginCodes(PgLogins(db)).issue("owner")
    other = LoginCodes(PgLogins(db))
    typed = f"{issued.code[:5].lower()}-{issued.code[5:]}"  # as a person types it
    assert await other.take(typed) == "owner"
    assert await other.take(issued.code) is None
    assert await LoginCodes(PgLogins(db)).take("ABCDEFGHJK") is None


async def test_an_expired_code_is_refused(db: PgDatabase) -> None:
    codes = LoginCodes(PgLogins(db))
    issued = await codes.issue("owner", ttl=600)
    async with db.transaction() as conn:
        await conn.execute("UPDATE web_pairing SET expires_at = now() - interval '1 second'")
    assert await codes.take(issued.code) is None


async def test_a_logout_on_one_replica_ends_the_login_on_another(db: PgDatabase) -> None:
    secret = await signing_secret(PgLogins(db))
    one, two = Logouts(), Logouts()
    signer = Sessions(secret, 3600, logouts=one)
    reader = Sessions(secret, 3600, logouts=two)
    cookie, login = signer.new("owner")
    kept, _ = signer.new("owner")
    assert reader.read(cookie) == login
    woken: list[str] = []
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: follow_logouts(PgLogins(db), two, woken.append, every=0.05))
        signer.revoke(login)
        await PgLogins(db).revoke(login.principal, login.nonce, login.expires_at)
        with anyio.fail_after(10):
            while reader.read(cookie) is not None:
                await anyio.sleep(0.05)
        group.cancel_scope.cancel()
    assert woken == ["owner"]
    assert reader.read(kept) is not None  # the other login of the same person holds
    assert [r.nonce for r in await PgLogins(db).revoked_after(0)] == [login.nonce]


async def test_an_expired_logout_is_no_longer_read(db: PgDatabase) -> None:
    logins = PgLogins(db)
    await logins.revoke("owner", "old", 1.0)  # the cookie expired long ago
    await logins.revoke("owner", "new", 4e9)
    assert [r.nonce for r in await logins.revoked_after(0)] == ["new"]
