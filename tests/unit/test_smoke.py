import socket

import pytest

import thalos_bot


def test_version_is_set() -> None:
    assert thalos_bot.__version__


def test_network_is_blocked_except_loopback() -> None:
    with socket.socket() as s, pytest.raises(OSError, match="loopback"):
        s.connect(("192.0.2.1", 80))
