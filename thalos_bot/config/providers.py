"""``[[providers]]``: the model backends agents can use, by id.

Today's single ``[provider]`` table is still read: it is the provider with id
``default``, the one an agent without ``provider`` uses. A ``[[providers]]`` entry may
take the id ``default`` instead (then ``[provider]`` keeps only compaction and the old
``max_tool_rounds``). Each agent resolves to a :class:`Route`: its provider, the model
it asks for, and the fallback providers tried in order when the first cannot answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from thalos_bot.config.types import HOUR, Slug, duration

ProviderKind = Literal["anthropic", "openai", "scripted"]
DEFAULT_PROVIDER = "default"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
SCRIPTED_MODEL = "scripted-echo"
CONNECTION_KEYS = frozenset(
    {"kind", "model", "max_output_tokens", "base_url", "timeout", "max_retries", "context_window"}
)
"""Keys of ``[provider]`` that describe the ``default`` provider itself."""


class ProviderEntry(BaseModel):
    """One ``[[providers]]`` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Slug
    kind: ProviderKind
    model: str | None = Field(None, min_length=1, max_length=200)
    base_url: str | None = Field(None, pattern=r"^https?://\S+$")
    timeout: Annotated[float, duration(high=HOUR)] = 120.0
    max_retries: int = Field(2, ge=0, le=10)
    context_window: int | None = Field(None, ge=1_000)
    """Tokens; left out: asked of the server (openai), or the model's known window."""
    max_output_tokens: int = Field(4096, ge=1, le=200_000)
    api_key_env: str | None = Field(None, pattern=ENV_NAME)
    """The environment variable holding the key (``ANTHROPIC_API_KEY`` for anthropic
    when left out; none for openai, e.g. a local server)."""
    prompt_caching: StrictBool = True
    vision: StrictBool = True
    """False: the model takes no images (they are sent as a short note)."""
    tools: StrictBool = True
    """False: the model has no tool calling (tools are not offered)."""


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """A provider as the daemon builds it (from ``[[providers]]`` or ``[provider]``)."""

    id: str
    kind: ProviderKind
    model: str
    base_url: str | None
    timeout: float
    max_retries: int
    context_window: int | None
    max_output_tokens: int
    api_key_env: str | None
    prompt_caching: StrictBool = True
    vision: StrictBool = True
    tools: StrictBool = True

    @property
    def key_env(self) -> str | None:
        """The variable the key is read from (None: no key is used)."""
        if self.api_key_env is not None:
            return self.api_key_env
        return ANTHROPIC_KEY_ENV if self.kind == "anthropic" else None

    @property
    def endpoint(self) -> str:
        return self.base_url or "the SDK's default endpoint"


def spec_of(entry: ProviderEntry, default_model: str) -> ProviderSpec:
    model = entry.model or (SCRIPTED_MODEL if entry.kind == "scripted" else default_model)
    return ProviderSpec(
        id=entry.id,
        kind=entry.kind,
        model=model,
        base_url=entry.base_url,
        timeout=entry.timeout,
        max_retries=entry.max_retries,
        context_window=entry.context_window,
        max_output_tokens=entry.max_output_tokens,
        api_key_env=entry.api_key_env,
        prompt_caching=entry.prompt_caching,
        vision=entry.vision,
        tools=entry.tools,
    )


@dataclass(frozen=True, slots=True)
class Route:
    """Where one agent's model calls go."""

    primary: ProviderSpec
    model: str
    """The model asked of the primary provider (the agent's override, or its own)."""
    max_output_tokens: int
    fallback: tuple[ProviderSpec, ...] = ()

    @property
    def chain(self) -> tuple[ProviderSpec, ...]:
        return (self.primary, *self.fallback)

    def describe(self) -> str:
        names = [f"{self.primary.id} ({self.model})"]
        names += [f"{spec.id} ({spec.model})" for spec in self.fallback]
        return " → ".join(names)


MODEL_REQUIRED = 'model: required for kind "openai" (the server\'s model name)'


def chain_problem(
    agent_index: int, primary: str, fallback: list[str], known: set[str]
) -> str | None:
    """The configuration error of one agent's provider chain, or None."""
    where = f"agents[{agent_index}]"
    if primary not in known:
        return f"{where}.provider: {primary!r} is not a provider id (providers: {_ids(known)})"
    seen = [primary]
    for index, name in enumerate(fallback):
        if name not in known:
            return (
                f"{where}.fallback[{index}]: {name!r} is not a provider id "
                f"(providers: {_ids(known)})"
            )
        if name in seen:
            path = " → ".join([*seen, name])
            return (
                f"{where}.fallback[{index}]: {name!r} is already in the chain ({path}): "
                "a fallback cycle"
            )
        seen.append(name)
    return None


def _ids(known: set[str]) -> str:
    return ", ".join(sorted(known))
