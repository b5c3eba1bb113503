"""Test-wide setup: the anyio plugin on asyncio, and no network except loopback."""

from __future__ import annotations

import ipaddress
import os
import socket
from typing import Any

import pytest

pytest_plugins = ["tests.provider_pair"]

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _allowed(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    host = address[0] if isinstance(address, tuple) else address
    if host in {"localhost", ""}:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class NetworkBlockedError(OSError):
    pass


def _guarded_connect(self: socket.socket, address: Any) -> None:
    if not _allowed(address):
        raise NetworkBlockedError(f"tests may only connect to loopback, not {address!r}")
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    if not _allowed(address):
        raise NetworkBlockedError(f"tests may only connect to loopback, not {address!r}")
    return _real_connect_ex(self, address)


def pytest_configure(config: pytest.Config) -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign,assignment]
    # No test may depend on a real key, and none may leak one.
    for name in ("ANTHROPIC_API_KEY", "TELEGRAM_BOT_TOKEN", "THALOS_BOT_CONFIG"):
        os.environ.pop(name, None)
    # python-telegram-bot 22 warns (an error here) unless durations are timedeltas.
    os.environ["PTB_TIMEDELTA"] = "true"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point the XDG state directory at a temporary folder, so no test writes to $HOME."""
    state = tmp_path_factory.mktemp("xdg-state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.delenv("THALOS_BOT_STATE_DIR", raising=False)
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
