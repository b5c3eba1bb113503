"""Login sessions as signed cookies, and the CSRF token bound to each.

A cookie holds the principal, a random nonce and an expiry, signed with HMAC-SHA256
under a secret kept in the state folder (mode 0600, made on first use), so a login
survives a restart of the daemon. The CSRF token is a second HMAC, of the nonce: the
page reads it from its ``<meta>`` and sends it in ``X-CSRF-Token`` with every POST; a
page on another origin can neither read it nor (SameSite=Strict) send the cookie.
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
from pathlib import Path

from thalos_bot.storage.private import ensure_private_file

COOKIE = "thalos_web"
SECRET_FILE = "web_secret"  # noqa: S105 - a file name; the secret is made at first use
SECRET_BYTES = 32


@dataclass(frozen=True, slots=True)
class Login:
    principal: str
    nonce: str
    expires_at: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load_secret(state_dir: Path) -> bytes:
    path = state_dir / SECRET_FILE
    ensure_private_file(path)
    data = path.read_bytes()
    if len(data) >= SECRET_BYTES:
        return data
    data = secrets.token_bytes(SECRET_BYTES)
    path.write_bytes(data)
    return data


class Sessions:
    def __init__(self, secret: bytes, ttl: float, clock: Callable[[], float] = time.time) -> None:
        self._secret = secret
        self._ttl = ttl
        self._clock = clock

    def _sign(self, purpose: str, payload: str) -> str:
        mac = hmac.new(self._secret, f"{purpose}:{payload}".encode(), hashlib.sha256)
        return _b64(mac.digest())

    def new(self, principal: str) -> tuple[str, Login]:
        login = Login(principal, secrets.token_urlsafe(16), self._clock() + self._ttl)
        body = {"p": login.principal, "n": login.nonce, "e": login.expires_at}
        payload = _b64(json.dumps(body, separators=(",", ":")).encode())
        return f"{payload}.{self._sign('cookie', payload)}", login

    def read(self, cookie: str | None) -> Login | None:
        """The login ``cookie`` carries, or None (missing, forged, expired)."""
        if not cookie or cookie.count(".") != 1:
            return None
        payload, signature = cookie.split(".")
        if not hmac.compare_digest(signature, self._sign("cookie", payload)):
            return None
        try:
            body = json.loads(_unb64(payload))
            login = Login(str(body["p"]), str(body["n"]), float(body["e"]))
        except (ValueError, KeyError, TypeError):
            return None
        return login if login.expires_at > self._clock() else None

    def csrf(self, login: Login) -> str:
        return self._sign("csrf", login.nonce)

    def csrf_ok(self, login: Login, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token, self.csrf(login))

    @property
    def ttl(self) -> float:
        return self._ttl
