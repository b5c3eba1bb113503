"""A free port for a server a test starts, one that nothing else will take meanwhile.

A port the kernel hands out for ``bind(("127.0.0.1", 0))`` comes from its ephemeral
range, the same range every outgoing connection takes its local port from. Between our
probe's close and the server's bind, any client on the machine (another xdist worker's
connection to PostgreSQL, say) may take it, and the server fails with "Address already
in use". So the ports here come from below that range, which the kernel never hands out
on its own, and each xdist worker has its own band of them, so two workers never pick
the same one. A port is handed out only when a bind to it succeeds now.
"""

from __future__ import annotations

import itertools
import os
import random
import socket
import threading
from pathlib import Path

FLOOR = 10_000
BAND = 1_500
_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_start() -> int:
    try:
        return int(_RANGE.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _band() -> range | None:
    """This process's ports: one band per xdist worker (the controller, or a process
    outside pytest, has the first), or None when no band is left for it below the range
    (never one band for two workers)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker.removeprefix("gw")) + 1 if worker.startswith("gw") else 0
    bands = (_ephemeral_start() - FLOOR) // BAND
    if index >= bands:  # more workers than bands: the kernel's ports (and their race)
        return None
    low = FLOOR + index * BAND
    return range(low, low + BAND)


_lock = threading.Lock()
_band_ports = _band()
# A worker the watchdog ended is replaced by one with the same band, whose servers may
# still hold the first ports: each process starts at its own place in the band.
_turn = itertools.count(random.randrange(BAND))


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A port on 127.0.0.1 that no socket holds now, and that only a test will take."""
    if _band_ports is None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return int(probe.getsockname()[1])
    with _lock:
        for _ in range(BAND):
            port = _band_ports[next(_turn) % BAND]
            if _bindable(port):
                return port
    raise RuntimeError(f"no free port left in {_band_ports}")
