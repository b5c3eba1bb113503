"""Login cookies and their revocation, and the logins kept in the daemon's SQLite file:
one signing secret, logouts that outlive a restart, a login code taken once (an expired
one never). The same on PostgreSQL: tests/cluster/test_web_logins.py."""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from tests.web.test_pair_service import CONFIG
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.web_logins import SqliteLogins
from thalos_bot_web import cli
from thalos_bot_web.pairing import LoginCodes
from thalos_bot_web.sessions import Logouts, Sessions, signing_secret

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as opened:
        yield opened


async def started(logins: SqliteLogins, clock: Clock) -> Sessions:
    """A daemon's sessions: the store's secret, and the logouts it has read."""
    logouts = Logouts(clock)
    await logouts.read(logins, lambda principal: None)
    return Sessions(await signing_secret(logins), 3600, clock, logouts)


async def test_a_logout_outlives_a_restart_and_is_forgotten_once_expired(db: Database) -> None:
    clock = Clock()
    logins = SqliteLogins(db, clock)
    first = await started(logins, clock)
    cookie, login = first.new("p1")
    other, _ = first.new("p1")
    first.revoke(login)
    await logins.revoke(login.principal, login.nonce, login.expires_at)
    assert first.read(cookie) is None
    restarted = await started(logins, clock)
    assert restarted.read(cookie) is None, "the logout was lost on restart"
    assert restarted.read(other) is not None, "only that login is logged out"
    clock.now += 3601
    await logins.revoke("p2", "late", clock.now + 3600)
    assert [r.nonce for r in await logins.revoked_after(0)] == ["late"], "expired: pruned"


async def test_one_signing_secret_the_first_made(db: Database) -> None:
    logins = SqliteLogins(db)
    first = await signing_secret(logins)
    assert len(first) == 32
    assert await logins.secret(b"b" * 32) == first


async def test_a_login_code_is_taken_once_and_an_expired_one_never(db: Database) -> None:
    clock = Clock()
    codes = LoginCodes(SqliteLogins(db, clock))
    issued = await codes.issue("owner")
    typed = f"{issued.code[:5].lower()}-{issued.code[5:]}"  # as a person types it
    assert await codes.take(typed) == "owner"
    assert await codes.take(issued.code) is None
    assert await codes.take("ABCDEFGHJK") is None
    late = await codes.issue("owner", ttl=600)
    clock.now += 601
    assert await codes.take(late.code) is None


def test_pairing_before_the_daemon_made_its_logins_says_to_start_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No database yet, or one the daemon has not started on since the logins came: the
    command writes nothing and says to start the daemon."""
    (tmp_path / "bot.toml").write_text(CONFIG, encoding="utf-8")
    state = tmp_path / "state"
    monkeypatch.setenv("THALOS_BOT_STATE_DIR", str(state))
    args = argparse.Namespace(config=tmp_path / "bot.toml", principal=None)
    assert cli._run_pair(args) == 1
    assert "start the daemon once" in capsys.readouterr().err
    anyio.run(_older, state / "thalos.db")
    assert cli._run_pair(args) == 1
    assert "it has no logins yet: start the daemon once first" in capsys.readouterr().err


async def _older(path: Path) -> None:
    """A database of a daemon from before the logins' tables (the core's tables only)."""
    async with await Database.open(path):
        pass
