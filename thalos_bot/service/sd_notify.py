"""The systemd notification protocol: one datagram per message to ``$NOTIFY_SOCKET``.

``READY=1`` once the daemon serves, ``WATCHDOG=1`` from the pump's own loop,
``STOPPING=1`` on shutdown, ``STATUS=…`` for ``systemctl status``. Without
``NOTIFY_SOCKET`` (not under systemd) every call is a no-op. A notification must never
take the daemon down, so send failures are logged and swallowed.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping

import structlog

log = structlog.get_logger(__name__)


class Notifier:
    """Sends sd_notify messages. Build it with :meth:`from_environment`."""

    def __init__(self, address: str | None, watchdog_usec: int | None = None) -> None:
        self.address = address
        self.watchdog_interval = watchdog_usec / 1_000_000 if watchdog_usec else None
        self._last_ping = 0.0

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Notifier:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET") or None
        watchdog: int | None = None
        raw = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        if raw.isdigit() and (not pid or pid == str(os.getpid())):
            watchdog = int(raw)
        return cls(address, watchdog)

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def notify(self, *lines: str) -> bool:
        """Send one datagram of ``KEY=value`` lines; True when it was sent."""
        if self.address is None:
            return False
        target = self.address
        if target.startswith("@"):  # an abstract socket
            target = "\0" + target[1:]
        payload = "\n".join(lines).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(target)
                sock.sendall(payload)
        except OSError as exc:
            log.warning("sd_notify_failed", error=exc.strerror or type(exc).__name__)
            return False
        return True

    def ready(self, status: str = "") -> bool:
        return self.notify("READY=1", *([f"STATUS={status}"] if status else []))

    def stopping(self, status: str = "") -> bool:
        return self.notify("STOPPING=1", *([f"STATUS={status}"] if status else []))

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={text}")

    def watchdog(self) -> bool:
        """Ping the watchdog, at most about twice per watchdog interval."""
        if self.watchdog_interval is None:
            return False
        now = time.monotonic()
        if now - self._last_ping < self.watchdog_interval / 4:
            return False
        self._last_ping = now
        return self.notify("WATCHDOG=1")
