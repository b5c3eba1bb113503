"""Telling the admins when someone reaches a spending limit.

The first time in a day (or a month) that a person reaches one of their limits (or an
agent one of its own, over everyone), each
person holding the ``admin`` role is told in the conversation they last talked in,
through the outbox (so the notice survives a restart, and a replica's retry adds
nothing: the row's key names the person, the period, the limit and the admin). The
person themself reads the refusal in their own chat, with when it resets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from thalos_bot.runtime.limits import LimitHit
from thalos_bot.service.outbox import Outbox
from thalos_bot.storage.conversations import Reaching

log = structlog.get_logger(__name__)


def admin_notice(principal: str, hit: LimitHit) -> str:
    every = "monthly" if hit.limit.startswith("monthly") else "daily"
    if hit.agent:
        return (
            f"[budget] The agent {hit.agent} reached its {every} limit ({hit.limit}) over "
            "everyone; its turns are refused until it resets ([[agents]] in the config)."
        )
    return (
        f"[budget] {principal} reached their {every} limit ({hit.limit}); their turns are "
        f"refused until it resets. To lift it for today: /budget lift {principal}"
    )


@dataclass
class TellAdmins:
    admins: Callable[[], Iterable[str]]
    reach: Reaching
    outbox: Outbox | None = None
    """Set once the outbox runs; until then nobody is told (logged)."""

    async def __call__(self, principal: str, hit: LimitHit) -> None:
        told = 0
        for admin in self.admins():
            if admin == principal:
                continue  # the refusal in their own chat says it
            where = await self.reach.latest_of(admin)
            if where is None or self.outbox is None:
                log.info("budget_admin_unreachable", admin=admin, person=principal)
                continue
            channel, conversation = where
            key = f"budget:{principal}:{hit.period}:{hit.limit}:{admin}"
            await self.outbox.deliver(
                channel, conversation, admin_notice(principal, hit), kind="notice", key=key
            )
            told += 1
        log.info("budget_limit_reached", person=principal, limit=hit.limit, admins_told=told)
