"""One-time login codes: issued by ``thalos-bot web pair``, redeemed by the daemon.

The command and the daemon are two processes; the codes are kept in the daemon's store
(:class:`~thalos_bot.channels.logins.SharedLogins`: its SQLite file, or on replicas the
shared PostgreSQL, so any replica redeems a code), only as a hash of each. A code is
good for :data:`CODE_TTL` seconds and for one login.
"""

from __future__ import annotations

from dataclasses import dataclass

from thalos_bot.channels.admission.pairing import CODE_TTL
from thalos_bot.channels.logins import SharedLogins
from thalos_bot.domain.codes import code_hash, new_code

CODE_LENGTH = 10


@dataclass(frozen=True, slots=True)
class Issued:
    code: str


class LoginCodes:
    def __init__(self, logins: SharedLogins) -> None:
        self._logins = logins

    async def issue(self, principal: str, ttl: float = CODE_TTL) -> Issued:
        code = new_code(CODE_LENGTH)
        await self._logins.issue_code(code_hash(code), principal, ttl)
        return Issued(code)

    async def take(self, code: str) -> str | None:
        """The principal ``code`` was issued for, once (None: unknown, used, expired)."""
        return await self._logins.redeem_code(code_hash(code))
