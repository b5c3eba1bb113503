"""``[[people]]``: each person once, with their roles and their identities on each
transport (see :mod:`thalos_bot.domain.people`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from thalos_bot.config.types import Slug
from thalos_bot.domain.people import TERMINAL, Budget, Person


class PersonSettings(BaseModel):
    """``[[people]]``: one person."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Slug
    """Their principal: what their memories, sessions, schedules and spend are kept
    under. Keep it once chosen (an existing deployment's owner: its ``principal_id``)."""
    name: str = Field("", max_length=100)
    roles: list[str] = Field(default_factory=list)
    identities: dict[str, list[str | int]] = Field(default_factory=dict)
    """Their ids by transport: ``{ telegram = [4242], matrix = ["@ana:example.org"],
    slack = ["U0123ABCD"], discord = [80351110224678912], web = ["ana"] }``."""
    terminal: bool = False
    """They are whoever types into ``thalos-bot chat`` on this machine."""
    daily_tokens: int | None = Field(None, ge=1)
    """Their daily token limit, in place of ``[limits] daily_tokens``."""
    daily_cost_usd: float | None = Field(None, gt=0, le=1_000_000)
    """Their daily cost limit, in place of ``[limits] daily_cost_usd``."""
    monthly_tokens: int | None = Field(None, ge=1)
    """Their monthly token limit, in place of ``[limits] monthly_tokens``."""
    monthly_cost_usd: float | None = Field(None, gt=0, le=10_000_000)
    """Their monthly cost limit, in place of ``[limits] monthly_cost_usd``."""

    @field_validator("identities")
    @classmethod
    def _ids(cls, value: dict[str, list[str | int]]) -> dict[str, list[str | int]]:
        for transport, ids in value.items():
            if not transport.isidentifier() or transport == TERMINAL:
                raise ValueError(
                    f"{transport!r} is not a transport name (telegram, matrix, slack, "
                    "discord, web, ...; the terminal is `terminal = true`)"
                )
            for given in ids:
                if isinstance(given, bool) or not str(given).strip():
                    raise ValueError(f"identities.{transport}: {given!r} is not an id")
        return value

    def person(self) -> Person:
        identities = [(t, str(i).strip()) for t, ids in self.identities.items() for i in ids]
        if self.terminal:
            identities.append((TERMINAL, TERMINAL))
        budget = Budget(
            self.daily_tokens, self.daily_cost_usd, self.monthly_tokens, self.monthly_cost_usd
        )
        return Person(self.id, self.name or self.id, tuple(self.roles), tuple(identities), budget)


def people_problem(people: list[PersonSettings]) -> str | None:
    """The first clash among ``[[people]]`` (an id listed twice, an identity claimed by
    two people), as ``people[i].key: why``; None when there is none."""
    ids: dict[str, int] = {}
    owners: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(people):
        if entry.id in ids:
            return f"people[{index}].id: {entry.id!r} is already used by people[{ids[entry.id]}]"
        ids[entry.id] = index
        for transport, user in entry.person().identities:
            before = owners.setdefault((transport, user), index)
            if before != index:
                key = "terminal" if transport == TERMINAL else f"identities.{transport}"
                return (
                    f"people[{index}].{key}: {user!r} is already "
                    f"people[{before}]'s ({people[before].id}); an identity is one person's"
                )
    return None
