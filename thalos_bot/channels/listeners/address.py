"""A listener's ``listen`` address (``host:port``), and whether it is this machine only."""

from __future__ import annotations

import ipaddress


def split_listen(listen: str, example: str = "127.0.0.1:8765") -> tuple[str, int]:
    """``"127.0.0.1:8765"`` or ``"[::1]:8765"`` as (host, port); ``example`` is the
    shape named when ``listen`` is not one."""
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"{listen!r} is not host:port, e.g. {example!r}")
    number = int(port)
    if not 0 <= number <= 65535:
        raise ValueError(f"port {number} is out of range (0-65535)")
    return host.removeprefix("[").removesuffix("]"), number


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, without a port) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
