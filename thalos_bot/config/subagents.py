"""``[subagents]`` (limits of detached runs) and ``[[schedules]]`` (operator jobs)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from thalos_bot.config.types import HOUR, MINUTE, Slug, duration
from thalos_bot.domain.address import Address
from thalos_bot.domain.timing import check_cron


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


class SubagentSettings(_Section):
    """``[subagents]``: the host defaults for a run nobody watches (a delegated task, a
    scheduled job)."""

    max_total_tokens: int = Field(50_000, ge=1_000, le=10_000_000)
    """Tokens one run may spend (input, output and cache, summed over its model calls)."""
    deadline: Annotated[float, duration(1.0, high=24 * HOUR)] = 10 * MINUTE
    """Wall time one run may take; past it the run is cancelled."""
    max_depth: int = Field(2, ge=1, le=5)
    """How many levels deep agents may hand work to agents (1: no nesting)."""


class ScheduleSettings(_Section):
    """``[[schedules]]``: one job the operator defines."""

    id: Slug
    task: str = Field(min_length=1, max_length=10_000)
    agent: str | None = Field(None, min_length=1, max_length=64)
    """Default: the default agent."""
    cron: str | None = None
    at: datetime | None = None
    timezone: str = "UTC"
    deliver_to: str
    principal: str = Field(min_length=1, max_length=128)
    roles: list[str] = Field(default_factory=list)
    daily_tokens: int | None = Field(None, ge=1)
    """What this schedule's runs may spend a day; a run projected past it is skipped."""
    monthly_tokens: int | None = Field(None, ge=1)
    """What this schedule's runs may spend a calendar month."""

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA time zone (e.g. Europe/Berlin)") from None
        return value

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None:
            check_cron(value)
        return value

    @field_validator("at")
    @classmethod
    def _at(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("needs a UTC offset, e.g. 2026-05-01T09:00:00+02:00")
        return value

    @field_validator("deliver_to")
    @classmethod
    def _address(cls, value: str) -> str:
        Address.parse(value)
        return value

    @model_validator(mode="after")
    def _one_timing(self) -> Self:
        if (self.cron is None) == (self.at is None):
            raise ValueError("give exactly one of cron or at")
        return self
