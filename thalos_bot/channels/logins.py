"""The optional port for a channel that serves a page with logins, on replicas: what
makes a login one of the whole bot instead of one process's.

With ``[storage] url`` on PostgreSQL, replicas behind a balancer serve the same page;
a browser may reach any of them. So the cookie's signing secret, the logouts (the
nonces of logins revoked before they expired) and the one-time login codes are kept in
the shared store (:mod:`thalos_bot.cluster.web_logins`), not in a replica's state
folder. None (one process): the channel keeps them in its state folder.

A code is handed over as a SHA-256 of it, never the code; the logouts carry a growing
``seq`` so a replica asks only for the ones it has not seen.
"""

from __future__ import annotations

from typing import Protocol

from thalos_bot.cluster.web_logins import Revoked

__all__ = ["Revoked", "SharedLogins"]


class SharedLogins(Protocol):
    async def secret(self, made: bytes) -> bytes:
        """The signing secret every replica uses: ``made`` when none was kept yet (the
        first replica's wins when two start together)."""
        ...

    async def revoke(self, principal: str, nonce: str, expires_at: float) -> None:
        """Log a login out on every replica (kept until ``expires_at``)."""
        ...

    async def revoked_after(self, seq: int) -> list[Revoked]:
        """The logouts after ``seq`` (0: all), oldest first, perhaps with a few seen
        already (known by their nonce); expired ones are left out."""
        ...

    async def issue_code(self, digest: str, principal: str, ttl: float) -> None:
        """Keep a one-time code (its digest) for ``principal``, good for ``ttl`` s."""
        ...

    async def redeem_code(self, digest: str) -> str | None:
        """The principal of the code whose digest is ``digest``, once; None when it is
        unknown, used or expired."""
        ...
