"""A stored schedule as everyone reads it (the store, the scheduler, the CLI and the
dashboard); the store itself is :mod:`thalos_bot.schedules.store`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from thalos_bot.domain.address import Address
from thalos_bot.domain.security import SecurityContext

State = Literal["active", "paused", "done", "cancelled"]
Origin = Literal["tool", "config"]


@dataclass(frozen=True, slots=True)
class Schedule:
    id: str
    origin: Origin
    owner: str
    roles: frozenset[str]
    agent_id: str
    task: str
    cron: str | None
    at: datetime | None
    timezone: str
    deliver_to: Address
    state: State
    next_run: datetime | None
    last_started: datetime | None
    runs: int
    created_at: datetime
    last_result: str | None = None
    """How the last run ended, in words (``ok``, ``failed: …``, ``skipped: …``); None
    before the first run ended."""
    last_finished: datetime | None = None

    @property
    def caller(self) -> SecurityContext:
        """The principal that created the schedule: every run runs as it."""
        return SecurityContext.of(self.owner, self.roles)

    @property
    def timing(self) -> str:
        if self.cron is not None:
            return f"cron '{self.cron}' ({self.timezone})"
        return "once"
