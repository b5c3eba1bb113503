"""One-time login codes: written by ``thalos-bot web pair``, redeemed by the daemon.

The command and the daemon are two processes, so the codes live in a small file in the
state folder (mode 0600), under an exclusive ``flock`` while either side reads and
rewrites it. Only a SHA-256 of each code is stored. A code is good for
:data:`CODE_TTL` seconds and for one login: redeeming it removes it, and expired codes
are dropped whenever the file is written.

On replicas (``[storage] url`` on PostgreSQL) the codes are in the shared store instead
(:class:`thalos_bot_web.shared_logins.SharedCodes`), so any replica redeems a code made
in any replica's folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from thalos_bot.storage.private import ensure_private_file

CODE_TTL = 600.0
"""Ten minutes."""
FILE_NAME = "web_pairing.json"
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
"""No 0/O or 1/I: a code is read off one screen and typed on another."""
CODE_LENGTH = 10

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Issued:
    code: str
    principal: str
    expires_at: float


class CodeBook(Protocol):
    async def take(self, code: str) -> str | None:
        """The principal ``code`` was issued for, once (None: unknown, used, expired)."""
        ...


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def digest(code: str) -> str:
    """What is stored of a code: a SHA-256 of its normalized form."""
    return _digest(code)


def _digest(code: str) -> str:
    return hashlib.sha256(normalize(code).encode()).hexdigest()


def normalize(code: str) -> str:
    """What counts of a typed code: letters and digits, upper-cased."""
    return "".join(ch for ch in code.upper() if ch.isalnum())


def shown(code: str) -> str:
    """``ABCDE-FGHJK``: easier to read out."""
    half = len(code) // 2
    return f"{code[:half]}-{code[half:]}"


class PairingBook:
    def __init__(self, state_dir: Path, clock: Clock = time.time) -> None:
        self._path = state_dir / FILE_NAME
        self._clock = clock

    def issue(self, principal: str, ttl: float = CODE_TTL) -> Issued:
        code = new_code()
        expires = self._clock() + ttl
        with self._locked() as entries:
            entries.append({"digest": _digest(code), "principal": principal, "expires": expires})
        return Issued(code, principal, expires)

    def redeem(self, code: str) -> str | None:
        """The principal ``code`` was issued for, once; None when it is unknown, used or
        expired."""
        wanted = _digest(code)
        with self._locked() as entries:
            for entry in entries:
                if hmac.compare_digest(str(entry.get("digest", "")), wanted):
                    entries.remove(entry)
                    return str(entry["principal"])
        return None

    async def take(self, code: str) -> str | None:
        return self.redeem(code)

    @contextmanager
    def _locked(self) -> Iterator[list[dict[str, object]]]:
        ensure_private_file(self._path)
        # Never through a symlink: root may run `web pair` in the service's folder.
        fd = os.open(self._path, os.O_RDWR | os.O_NOFOLLOW)
        with os.fdopen(fd, "r+", encoding="utf-8") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                entries = _parse(handle.read())
                now = self._clock()
                live = [e for e in entries if _expires(e) > now]
                yield live
                handle.seek(0)
                handle.truncate()
                handle.write(json.dumps(live))
                handle.flush()
                os.fsync(handle.fileno())
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _expires(entry: dict[str, object]) -> float:
    value = entry.get("expires")
    return float(value) if isinstance(value, int | float) else 0.0


def _parse(text: str) -> list[dict[str, object]]:
    try:
        data = json.loads(text) if text.strip() else []
    except json.JSONDecodeError:
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
