"""The page's logins on replicas: the signing secret, the logouts and the login codes in
the shared store the host hands over (:class:`~thalos_bot.channels.logins.SharedLogins`).

Checking a cookie stays a local, synchronous look-up: each replica keeps the logouts in
memory (a :class:`~thalos_bot_web.sessions.Logouts` without a file) and
:func:`follow_logouts` reads the new ones from the store every second, waking the
streams of their logins, which then end. A logout made on this replica is written to
the store before the answer, and known here at once.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable

import anyio
import structlog

from thalos_bot.channels.logins import SharedLogins
from thalos_bot_web.pairing import CODE_TTL, Issued, digest, new_code
from thalos_bot_web.sessions import SECRET_BYTES, Logouts

log = structlog.get_logger(__name__)

FOLLOW_EVERY = 1.0
"""How often a replica reads the logouts the others made (seconds)."""


async def shared_secret(logins: SharedLogins) -> bytes:
    return await logins.secret(secrets.token_bytes(SECRET_BYTES))


class SharedCodes:
    """One-time login codes in the shared store (a digest of each, as in the file)."""

    def __init__(self, logins: SharedLogins) -> None:
        self._logins = logins

    async def issue(self, principal: str, ttl: float = CODE_TTL) -> Issued:
        code = new_code()
        await self._logins.issue_code(digest(code), principal, ttl)
        return Issued(code, principal, time.time() + ttl)

    async def take(self, code: str) -> str | None:
        return await self._logins.redeem_code(digest(code))


async def follow_logouts(
    logins: SharedLogins,
    logouts: Logouts,
    woken: Callable[[str], None],
    *,
    every: float = FOLLOW_EVERY,
) -> None:
    """Keep ``logouts`` up to date with the store's, for ever; ``woken(principal)`` for
    each login another replica logged out. The store out of reach: try again later (the
    logouts known so far still hold)."""
    seq = 0
    while True:
        try:
            found = await logins.revoked_after(seq)
        except Exception as exc:  # noqa: BLE001 - a store that restarts must not stop it
            log.warning("web_logouts_unreadable", error=type(exc).__name__)
            found = []
        for revoked in found:
            seq = max(seq, revoked.seq)
            if not logouts.revoked(revoked.nonce):
                logouts.add(revoked.nonce, revoked.expires_at)
                woken(revoked.principal)
        await anyio.sleep(every)
