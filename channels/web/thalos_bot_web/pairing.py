"""One-time login codes: written by ``thalos-bot web pair``, redeemed by the daemon.

The command and the daemon are two processes, so the codes live in a small file in the
state folder (mode 0600), under an exclusive ``flock`` while either side reads and
rewrites it; on replicas (``[storage] url`` on PostgreSQL) in the shared store instead
(:class:`SharedCodes`), so any replica redeems a code made in any replica's folder.
Only a SHA-256 of each code is stored. A code is good for :data:`CODE_TTL` seconds and
for one login.
"""

from __future__ import annotations

import fcntl
import hmac
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from thalos_bot.channels.admission.pairing import CODE_TTL
from thalos_bot.channels.logins import SharedLogins
from thalos_bot.domain.codes import code_hash, new_code
from thalos_bot.storage.private import ensure_private_file

FILE_NAME = "web_pairing.json"
CODE_LENGTH = 10


@dataclass(frozen=True, slots=True)
class Issued:
    code: str
    principal: str
    expires_at: float


class CodeBook(Protocol):
    async def take(self, code: str) -> str | None:
        """The principal ``code`` was issued for, once (None: unknown, used, expired)."""
        ...


class PairingBook:
    def __init__(self, state_dir: Path, clock: Callable[[], float] = time.time) -> None:
        self._path = state_dir / FILE_NAME
        self._clock = clock

    def issue(self, principal: str, ttl: float = CODE_TTL) -> Issued:
        code = new_code(CODE_LENGTH)
        expires = self._clock() + ttl
        with self._locked() as entries:
            entries.append({"digest": code_hash(code), "principal": principal, "expires": expires})
        return Issued(code, principal, expires)

    async def take(self, code: str) -> str | None:
        wanted = code_hash(code)
        with self._locked() as entries:
            for entry in entries:
                if hmac.compare_digest(str(entry.get("digest", "")), wanted):
                    entries.remove(entry)
                    return str(entry["principal"])
        return None

    @contextmanager
    def _locked(self) -> Iterator[list[dict[str, object]]]:
        """The live entries, written back (expired ones dropped) when the block ends."""
        ensure_private_file(self._path)
        # Never through a symlink: root may run `web pair` in the service's folder.
        fd = os.open(self._path, os.O_RDWR | os.O_NOFOLLOW)
        with os.fdopen(fd, "r+", encoding="utf-8") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                now = self._clock()
                live = [e for e in _parse(handle.read()) if _expires(e) > now]
                yield live
                handle.seek(0)
                handle.truncate()
                handle.write(json.dumps(live))
                handle.flush()
                os.fsync(handle.fileno())
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class SharedCodes:
    """The codes in the shared store (replicas)."""

    def __init__(self, logins: SharedLogins) -> None:
        self._logins = logins

    async def issue(self, principal: str, ttl: float = CODE_TTL) -> Issued:
        code = new_code(CODE_LENGTH)
        await self._logins.issue_code(code_hash(code), principal, ttl)
        return Issued(code, principal, time.time() + ttl)

    async def take(self, code: str) -> str | None:
        return await self._logins.redeem_code(code_hash(code))


def _expires(entry: dict[str, object]) -> float:
    value = entry.get("expires")
    return float(value) if isinstance(value, int | float) else 0.0


def _parse(text: str) -> list[dict[str, object]]:
    try:
        data = json.loads(text) if text.strip() else []
    except json.JSONDecodeError:
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
