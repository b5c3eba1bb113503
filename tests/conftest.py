"""Test-wide setup: the anyio plugin on asyncio, and no network except loopback."""

from __future__ import annotations

import ipaddress
import os
import socket
from typing import Any

import pytest

from tests.hypothesis_budget import load_profile

pytest_plugins = ["tests.provider_pair", "tests.watchdog"]
HYPOTHESIS_PROFILE = load_profile()

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


def pytest_report_header() -> str:
    return f"hypothesis profile: {HYPOTHESIS_PROFILE} (tests/hypothesis_budget.py)"


def pytest_configure(config: pytest.Config) -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign,assignment]
    # No test may depend on a real key, and none may leak one.
    for name in ("ANTHROPIC_API_KEY", "TELEGRAM_BOT_TOKEN", "THALOS_BOT_CONFIG"):
        os.environ.pop(name, None)
    # python-telegram-bot 22 warns (an error here) unless durations are timedeltas.
    os.environ["PTB_TIMEDELTA"] = "true"


SHARED_SERVERS = {"synapse": "synapse", "flood_synapse": "synapse", "browser": "chromium"}
"""Fixtures whose server costs more to start than its tests take: the tests using one run
on one worker under ``pytest -n N --dist loadgroup`` (dev.py test), so each worker does
not start its own. The others (PostgreSQL, the web daemon, HAProxy) start once per worker
that needs them, each on a port the kernel gives and in a folder of that worker's own."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = getattr(item, "fixturenames", ())
        groups = sorted({SHARED_SERVERS[name] for name in names if name in SHARED_SERVERS})
        if groups:
            item.add_marker(pytest.mark.xdist_group("+".join(groups)))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits of the kit's reconnect backoff (``Reconnecting.failed``), recorded
    instead of slept."""
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)

    monkeypatch.setattr("thalos_bot.channels.reconnect.anyio.sleep", sleep)
    return delays


@pytest.fixture(autouse=True)
def _isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point the XDG state directory at a temporary folder, so no test writes to $HOME."""
    state = tmp_path_factory.mktemp("xdg-state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.delenv("THALOS_BOT_STATE_DIR", raising=False)
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
