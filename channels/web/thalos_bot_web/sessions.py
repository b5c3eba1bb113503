"""Login sessions as signed cookies, and the CSRF token bound to each.

A cookie holds the principal, a random nonce and an expiry, signed with HMAC-SHA256
under a secret kept in the daemon's store (made on first use), so a login survives a
restart of the daemon. The CSRF token is a second HMAC, of the nonce: the
page reads it from its ``<meta>`` and sends it in ``X-CSRF-Token`` with every POST; a
page on another origin can neither read it nor (SameSite=Strict) send the cookie.

Logging out revokes the login on the server too: its nonce is kept until the cookie
would have expired, so a copy of the cookie taken before the logout is refused, across
restarts as well.

The secret and the logouts are in the store the host hands over
(:class:`~thalos_bot.channels.logins.SharedLogins`: the daemon's SQLite file, or the
replicas' PostgreSQL). Checking a cookie stays a local, synchronous look-up: the
process keeps the logouts in memory (:class:`Logouts`), read from the store before the
page is served, and :func:`follow_logouts` reads the new ones every second (another
replica's). A logout made here is written to the store before the answer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import structlog

from thalos_bot.channels.logins import SharedLogins

log = structlog.get_logger(__name__)

COOKIE = "thalos_web"
SECRET_BYTES = 32
FOLLOW_EVERY = 1.0
"""How often a replica reads the logouts the others made (seconds)."""


@dataclass(frozen=True, slots=True)
class Login:
    principal: str
    nonce: str
    expires_at: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


async def signing_secret(logins: SharedLogins) -> bytes:
    """The store's secret (this one made, when it has none yet)."""
    return await logins.secret(secrets.token_bytes(SECRET_BYTES))


class Logouts:
    """The nonces of logins logged out before they expired, each with its expiry."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._gone: dict[str, float] = {}
        self.seq = 0
        """The store's last logout read."""

    def revoked(self, nonce: str) -> bool:
        return nonce in self._gone

    def add(self, nonce: str, expires_at: float) -> None:
        now = self._clock()
        self._gone = {n: e for n, e in self._gone.items() if e > now}
        self._gone[nonce] = expires_at

    async def read(self, logins: SharedLogins, woken: Callable[[str], None]) -> None:
        """The store's logouts not read yet; ``woken(principal)`` for each one new here
        (another replica's: its streams then end)."""
        for revoked in await logins.revoked_after(self.seq):
            self.seq = max(self.seq, revoked.seq)
            if not self.revoked(revoked.nonce):
                self.add(revoked.nonce, revoked.expires_at)
                woken(revoked.principal)


class Sessions:
    def __init__(
        self,
        secret: bytes,
        ttl: float,
        clock: Callable[[], float] = time.time,
        logouts: Logouts | None = None,
    ) -> None:
        self._secret = secret
        self.ttl = ttl
        self._clock = clock
        self._logouts = logouts or Logouts(clock)

    def _sign(self, purpose: str, payload: str) -> str:
        mac = hmac.new(self._secret, f"{purpose}:{payload}".encode(), hashlib.sha256)
        return _b64(mac.digest())

    def new(self, principal: str) -> tuple[str, Login]:
        login = Login(principal, secrets.token_urlsafe(16), self._clock() + self.ttl)
        body = {"p": login.principal, "n": login.nonce, "e": login.expires_at}
        payload = _b64(json.dumps(body, separators=(",", ":")).encode())
        return f"{payload}.{self._sign('cookie', payload)}", login

    def read(self, cookie: str | None) -> Login | None:
        """The login ``cookie`` carries, or None (missing, forged, expired)."""
        if not cookie or cookie.count(".") != 1:
            return None
        payload, signature = cookie.split(".")
        # As bytes: a str with non-ASCII characters (a cookie may carry any latin-1)
        # makes compare_digest raise instead of answering.
        if not hmac.compare_digest(signature.encode(), self._sign("cookie", payload).encode()):
            return None
        try:
            body = json.loads(_unb64(payload))
            login = Login(str(body["p"]), str(body["n"]), float(body["e"]))
        except (ValueError, KeyError, TypeError, RecursionError):
            return None
        return login if self.live(login) else None

    def live(self, login: Login) -> bool:
        """Whether ``login`` still holds: not expired, not logged out. Asked again by
        whatever outlasts one request (an open event stream)."""
        return login.expires_at > self._clock() and not self._logouts.revoked(login.nonce)

    def remaining(self, login: Login) -> float:
        """Seconds until ``login`` expires (0 when it has)."""
        return max(0.0, login.expires_at - self._clock())

    def revoke(self, login: Login) -> None:
        """Log ``login`` out for good: its cookie is refused from now on."""
        self._logouts.add(login.nonce, login.expires_at)

    def csrf(self, login: Login) -> str:
        return self._sign("csrf", login.nonce)

    def csrf_ok(self, login: Login, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.csrf(login).encode())


async def follow_logouts(
    logins: SharedLogins,
    logouts: Logouts,
    woken: Callable[[str], None],
    *,
    every: float = FOLLOW_EVERY,
) -> None:
    """Keep ``logouts`` up to date with the store's, for ever (:meth:`Logouts.read`).
    The store out of reach: try again later (the logouts known so far still hold)."""
    while True:
        await anyio.sleep(every)
        try:
            await logouts.read(logins, woken)
        except Exception as exc:  # noqa: BLE001 - a store that restarts must not stop it
            log.warning("web_logouts_unreadable", error=type(exc).__name__)
