"""Login cookies and their revocation, as the server keeps them (no daemon needed)."""

from __future__ import annotations

import stat
from pathlib import Path

from thalos_bot_web.sessions import LOGOUTS_FILE, Logouts, Sessions


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def sessions(state: Path, clock: Clock) -> Sessions:
    return Sessions(b"s" * 32, 3600, clock, Logouts(state / LOGOUTS_FILE, clock))


def test_a_logout_outlives_a_restart_and_is_forgotten_once_expired(tmp_path: Path) -> None:
    clock = Clock()
    first = sessions(tmp_path, clock)
    cookie, login = first.new("p1")
    other, _ = first.new("p1")
    first.revoke(login)
    assert first.read(cookie) is None
    path = tmp_path / LOGOUTS_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    restarted = sessions(tmp_path, clock)
    assert restarted.read(cookie) is None, "the logout was lost on restart"
    assert restarted.read(other) is not None, "only that login is logged out"
    clock.now += 3601
    _, late = restarted.new("p2")
    restarted.revoke(late)
    assert login.nonce not in path.read_text(), "expired logouts are pruned"


def test_an_unreadable_logout_list_refuses_the_logins_made_before(tmp_path: Path) -> None:
    clock = Clock()
    cookie, _ = sessions(tmp_path, clock).new("p1")
    (tmp_path / LOGOUTS_FILE).write_text("{not json")
    clock.now += 10
    restarted = sessions(tmp_path, clock)
    assert restarted.read(cookie) is None
    clock.now += 10
    fresh, _ = restarted.new("p1")
    assert restarted.read(fresh) is not None
