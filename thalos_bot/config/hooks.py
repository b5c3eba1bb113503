"""``[[hooks]]``: a signed webhook that starts one run per delivery (see
:mod:`thalos_bot.hooks`)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from thalos_bot.config.types import Slug
from thalos_bot.domain.address import Address
from thalos_bot.hooks.template import parse_template

HOOK_PREFIX = "/hooks/"
_PATH = re.compile(r"^/hooks/[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
NOWHERE = "nowhere"


class HookSettings(BaseModel):
    """``[[hooks]]``: one webhook another program may call."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)

    name: Slug
    path: str
    """Where the web channel takes it, under ``/hooks/`` (``/hooks/github``)."""
    secret_env: str
    """The environment variable that holds the shared secret (never the secret)."""
    scheme: Literal["github", "generic"] = "github"
    agent: str | None = Field(None, min_length=1, max_length=64)
    """Default: the default agent."""
    principal: str = Field(min_length=1, max_length=128)
    roles: list[str] = Field(default_factory=list)
    deliver_to: str
    """``telegram:<chat id>`` and the like, or ``nowhere`` (the result is only logged)."""
    prompt: str = Field(min_length=1, max_length=10_000)

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not _PATH.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a hook path; write {HOOK_PREFIX}<name>, e.g. /hooks/github"
            )
        return value

    @field_validator("secret_env")
    @classmethod
    def _env(cls, value: str) -> str:
        if not _ENV.fullmatch(value):
            raise ValueError(
                "names the environment variable that holds the secret (e.g. "
                "GITHUB_HOOK_SECRET), not the secret itself"
            )
        return value

    @field_validator("deliver_to")
    @classmethod
    def _address(cls, value: str) -> str:
        if value != NOWHERE:
            Address.parse(value)
        return value

    @field_validator("prompt")
    @classmethod
    def _template(cls, value: str) -> str:
        parse_template(value)
        return value

    @property
    def address(self) -> Address | None:
        return None if self.deliver_to == NOWHERE else Address.parse(self.deliver_to)


def hooks_problem(hooks: list[HookSettings], agents: set[str]) -> str | None:
    """The first clash among ``[[hooks]]`` (a name or path used twice, an unknown agent),
    as ``hooks[i].key: why``; None when there is none."""
    names: dict[str, int] = {}
    paths: dict[str, int] = {}
    for index, hook in enumerate(hooks):
        if hook.name in names:
            return (
                f"hooks[{index}].name: {hook.name!r} is already used by hooks[{names[hook.name]}]"
            )
        names[hook.name] = index
        if hook.path in paths:
            return (
                f"hooks[{index}].path: {hook.path!r} is already used by hooks[{paths[hook.path]}]"
            )
        paths[hook.path] = index
        if hook.agent is not None and hook.agent not in agents:
            return (
                f"hooks[{index}].agent: {hook.agent!r} is not an agent id "
                f"(agents: {', '.join(sorted(agents))})"
            )
    return None
