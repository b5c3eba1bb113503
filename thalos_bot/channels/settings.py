"""What every transport's ``[channels.<name>]`` section has: on or off, whom an accepted
sender acts as, how long answers get at shutdown, and how much of a text file is read.
A transport's own settings model adds its platform's keys to this one, and names the
shared checks below for the keys it has (its allowlist, its ids, its URLs)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.config.types import Seconds


class ChannelSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    users_key: ClassVar[str] = "allowed_users"
    """The key that lists the allowed users (pairing adds to it)."""

    enabled: bool = False
    principal_id: str = Field("owner", min_length=1, max_length=128)
    """Whom the first allowed user runs as when ``[[people]]`` does not list them (an
    existing deployment's owner keeps its memories); any other sender no person lists
    is a person of their own."""
    roles: list[str] = Field(default_factory=list)
    """Roles that ``principal_id`` holds (what tools and agents it may use)."""
    drain_timeout: Seconds = 5.0
    """At shutdown, how long pending answers get to reach the platform."""
    text_file_max_chars: int = Field(50_000, ge=1_000, le=500_000)
    """A text file longer than this is cut (with a marker saying so)."""

    def principal_note(self) -> str:
        """For a transport's summary in ``check``: whom its first allowed user runs as."""
        roles = ", ".join(self.roles) or "none"
        return f"the first as principal {self.principal_id!r} (roles: {roles})"

    def allowed_ids(self) -> list[str]:
        """The allowed users' platform ids as text, the first being the owner's: the
        list under :attr:`users_key` (none when the model has no such key)."""
        return [str(user) for user in getattr(self, self.users_key, ())]


class RetryingSettings(ChannelSettings):
    """A section whose transport connects again after a failure (a poll, a sync, an
    event stream): it waits ``backoff_initial``, then longer each time, up to
    ``backoff_max`` (a wait the platform asks for is obeyed on top)."""

    backoff_initial: Seconds = 1.0
    backoff_max: Seconds = 60.0

    @model_validator(mode="after")
    def _backoff_ordered(self) -> Self:
        if self.backoff_max < self.backoff_initial:
            raise ValueError("backoff_max: must not be shorter than backoff_initial")
        return self

    def reconnecting(self, channel: str) -> Reconnecting:
        """A connection's :class:`Reconnecting` (``channel`` names its log events),
        waiting these backoffs between tries."""
        return Reconnecting(channel, Backoff(self.backoff_initial, self.backoff_max))


# -- the checks transports share, as field validators a settings model names ------------
# Each returns a validator to bind in a model's body (``_listed = listed_when_enabled(...)``);
# the error it raises is the transport's own sentence, reported at the key it checks.


def listed_when_enabled(key: str, hint: str) -> Any:
    """``key`` (an allowlist, or a setting the transport cannot run without) may be
    empty only while the section is off (before pairing fills it): an enabled one
    refuses with ``hint``, which says what to give. Its field validates its default."""

    def check(value: Any, info: ValidationInfo) -> Any:
        if not value and info.data.get("enabled", False):
            raise ValueError(hint)
        return value

    return field_validator(key)(check)


def each_matching(key: str, pattern: re.Pattern[str], refusal: Callable[[str], str]) -> Any:
    """Every item of ``key`` (a list of ids, or one id: "" while it is not set yet) must
    match ``pattern``; the first that does not is refused with ``refusal(item)``."""

    def check(value: list[str] | str) -> list[str] | str:
        for item in value if isinstance(value, list) else [value] * bool(value):
            if not pattern.match(item):
                raise ValueError(refusal(item))
        return value

    return field_validator(key)(check)


def each_number(key: str, fits: Callable[[int], bool], refusal: Callable[[int], str]) -> Any:
    """Every item of ``key`` (a list of numeric ids, read as integers) must be a number
    that ``fits`` (a bool that reaches it is none); the first that is not is refused
    with ``refusal(item)``."""

    def check(value: list[int]) -> list[int]:
        for item in value:
            if isinstance(item, bool) or not fits(item):
                raise ValueError(refusal(item))
        return value

    return field_validator(key)(check)


def numbers_only(key: str, refusal: Callable[[str], str], *, signed: bool = False) -> Any:
    """Before ``key`` (a list of numeric ids) is read as integers: a text item that is no
    number (a name, a username) is refused with ``refusal(item)``."""

    def check(value: object) -> object:
        if isinstance(value, list):
            for item in value:
                if not isinstance(item, str):
                    continue
                digits = item.strip().lstrip("-") if signed else item.strip()
                if not digits.isdigit():
                    raise ValueError(refusal(item))
        return value

    return field_validator(key, mode="before")(check)


def without_trailing_slash(*keys: str) -> Any:
    """URLs written with or without a trailing ``/`` are kept without it."""

    def trim(value: str | None) -> str | None:
        return value.rstrip("/") if value is not None else None

    return field_validator(*keys)(trim)
