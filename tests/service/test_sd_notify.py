"""sd_notify over a real AF_UNIX datagram socket."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from thalos_bot.service.sd_notify import Notifier


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(2)
        yield sock, path


def test_no_socket_is_a_no_op() -> None:
    notifier = Notifier.from_environment({})
    assert not notifier.enabled
    assert notifier.ready() is False
    assert notifier.watchdog() is False


def test_ready_stopping_and_status(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    notifier = Notifier.from_environment({"NOTIFY_SOCKET": path})
    assert notifier.ready("serving 2 channels")
    assert sock.recv(4096) == b"READY=1\nSTATUS=serving 2 channels"
    assert notifier.stopping()
    assert sock.recv(4096) == b"STOPPING=1"
    assert notifier.status("3 turns running")
    assert sock.recv(4096) == b"STATUS=3 turns running"


def test_abstract_socket_address() -> None:
    name = f"thalos-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(2)
        assert Notifier.from_environment({"NOTIFY_SOCKET": "@" + name}).ready()
        assert sock.recv(4096) == b"READY=1"


def test_watchdog_pings_are_rate_limited(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}
    notifier = Notifier.from_environment(env)
    assert notifier.watchdog_interval == 30.0
    assert notifier.watchdog()
    assert sock.recv(4096) == b"WATCHDOG=1"
    assert not notifier.watchdog(), "a second ping right away is skipped"


def test_watchdog_meant_for_another_process_is_ignored(
    listener: tuple[socket.socket, str],
) -> None:
    _, path = listener
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"}
    assert Notifier.from_environment(env).watchdog_interval is None


def test_a_vanished_socket_is_logged_not_raised(tmp_path: Path) -> None:
    notifier = Notifier.from_environment({"NOTIFY_SOCKET": str(tmp_path / "gone.sock")})
    with capture_logs() as logs:
        assert notifier.ready() is False
    assert logs[0]["event"] == "sd_notify_failed"
