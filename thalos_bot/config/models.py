"""The shape of ``bot.toml``. Unknown keys are rejected everywhere, so a typo is an error."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from thalos_bot.config.guard import GuardSettings
from thalos_bot.config.hooks import HookSettings, hooks_problem
from thalos_bot.config.limits import LimitsSettings
from thalos_bot.config.media import MediaSettings
from thalos_bot.config.memory import MemorySettings
from thalos_bot.config.people import PersonSettings, people_problem
from thalos_bot.config.providers import (
    CONNECTION_KEYS,
    DEFAULT_PROVIDER,
    ENV_NAME,
    MODEL_REQUIRED,
    ProviderEntry,
    ProviderSpec,
    Route,
    chain_problem,
    spec_of,
)
from thalos_bot.config.skills import SkillsSettings
from thalos_bot.config.speech import SpeechSettings
from thalos_bot.config.storage import StorageSettings
from thalos_bot.config.subagents import ScheduleSettings, SubagentSettings
from thalos_bot.config.telemetry import TelemetrySettings
from thalos_bot.config.tools import McpServerList, ToolPolicySettings, ToolsSettings
from thalos_bot.config.transcription import TranscriptionSettings
from thalos_bot.config.types import HOUR, MINUTE, Glob, Seconds, Slug, duration
from thalos_bot.domain.agents import AgentCatalog, AgentDefinition, MemoryPolicy
from thalos_bot.domain.ids import AgentId
from thalos_bot.domain.people import Budget, People
from thalos_bot.domain.pricing import ModelPrice, PriceTable

DEFAULT_MODEL = "claude-sonnet-5-5"


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


class CompactionSettings(StrictModel):
    """``[provider] compaction``: condensing a long conversation to fit the window."""

    enabled: StrictBool = True
    threshold: float = Field(0.8, ge=0.3, le=0.95)
    keep_recent_turns: int = Field(6, ge=1, le=100)
    keep_tool_rounds: int = Field(3, ge=0, le=100)
    mask_tool_results_over: int = Field(2000, ge=200, le=1_000_000)
    summary_max_tokens: int = Field(2048, ge=256, le=32_000)
    keep_media_turns: int = Field(2, ge=0, le=20)


class ProviderSettings(StrictModel):
    """``[provider]``: the provider with id ``default`` (unless a ``[[providers]]`` entry
    takes that id), and compaction for every provider."""

    kind: Literal["anthropic", "openai", "scripted"] = "anthropic"
    model: str = Field(DEFAULT_MODEL, min_length=1, max_length=200)
    max_output_tokens: int = Field(4096, ge=1, le=200_000)
    base_url: str | None = Field(None, pattern=r"^https?://\S+$")
    timeout: Annotated[float, duration(high=HOUR)] = 120.0
    max_retries: int = Field(2, ge=0, le=10)
    max_tool_rounds: int = Field(8, ge=1, le=100)
    """The old name of ``[limits] turn_tool_rounds``, still read."""
    context_window: int = Field(200_000, ge=1_000)
    """For kind "openai", left out means unknown: asked of the server."""
    api_key_env: str | None = Field(None, pattern=ENV_NAME)
    prompt_caching: StrictBool = True
    compaction: CompactionSettings = CompactionSettings()

    def spec(self) -> ProviderSpec:
        """This table as the provider with id ``default``."""
        window: int | None = self.context_window
        if self.kind == "openai" and "context_window" not in self.model_fields_set:
            window = None
        return ProviderSpec(
            id=DEFAULT_PROVIDER,
            kind=self.kind,
            model=self.model,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            context_window=window,
            max_output_tokens=self.max_output_tokens,
            api_key_env=self.api_key_env,
            prompt_caching=self.prompt_caching,
        )


class AgentMemorySettings(StrictModel):
    """``agents[n].memory``: auto-recall for one agent."""

    enabled: StrictBool = False
    top_k: int = Field(5, ge=1, le=50)
    min_score: float = Field(0.0, ge=0.0)
    char_budget: int = Field(2000, ge=100, le=50_000)


class AgentSettings(StrictModel):
    """``[[agents]]``: one agent a user can talk to."""

    id: Slug
    name: str = Field(min_length=1, max_length=64)
    description: str = Field("", max_length=300)
    instructions: str = Field("", max_length=100_000)
    provider: Slug | None = None
    """The id of the provider this agent talks to (default: ``default``)."""
    model: str | None = Field(None, min_length=1, max_length=200)
    max_output_tokens: int | None = Field(None, ge=1, le=200_000)
    fallback: list[Slug] = Field(default_factory=list, max_length=10)
    """Provider ids tried in order when the first cannot answer (429, 529, 5xx, down)."""
    tools: list[Glob] = Field(default_factory=lambda: ["*"])
    skills: list[Glob] = Field(default_factory=list)
    memory: AgentMemorySettings = AgentMemorySettings()
    delegates: list[Glob] = Field(default_factory=list)
    daily_tokens: int | None = Field(None, ge=1)
    """What this agent may spend a day over everyone (its turns are refused after)."""
    daily_cost_usd: float | None = Field(None, gt=0, le=1_000_000)
    monthly_tokens: int | None = Field(None, ge=1)
    """What this agent may spend a calendar month over everyone."""
    monthly_cost_usd: float | None = Field(None, gt=0, le=10_000_000)

    def budget(self) -> Budget:
        """Its own limits, over everyone who talks to it."""
        return Budget(
            self.daily_tokens, self.daily_cost_usd, self.monthly_tokens, self.monthly_cost_usd
        )


class PumpSettings(StrictModel):
    """``[pump]``: the conversation lifecycle and streaming cadence."""

    idle_timeout: Annotated[float | None, duration(MINUTE, off=True)] = 7200.0
    """Quiet time after which a conversation's next message starts a new session;
    ``"off"`` (``None``): never."""
    flush_interval: Seconds = 1.0
    shutdown_grace: Annotated[float, duration(high=10 * MINUTE)] = 10.0
    tool_status: StrictBool = True

    @field_validator("flush_interval")
    @classmethod
    def _sane_flush(cls, value: float) -> float:
        if not 0.05 <= value <= 10:
            raise ValueError("must be between 0.05 and 10 seconds")
        return value


class OutboxSettings(StrictModel):
    """``[outbox]``: final answers kept until their channel confirmed them."""

    keep: Annotated[float, duration(MINUTE)] = 7 * 86400.0
    """How long a delivered (or refused) row stays before it is pruned."""


class LoggingSettings(StrictModel):
    """``[logging]``."""

    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "pretty"] = "auto"


def _default_agents() -> list[AgentSettings]:
    return [
        AgentSettings(
            id="assistant",
            name="Assistant",
            description="A general assistant.",
            instructions=(
                "You are a helpful, concise assistant. Answer in plain prose with short "
                "paragraphs; use Markdown only where it helps."
            ),
        )
    ]


class Settings(StrictModel):
    """The whole of ``bot.toml``."""

    state_dir: Path | None = None
    storage: StorageSettings = StorageSettings()
    default_agent: str | None = None
    provider: ProviderSettings = ProviderSettings()
    providers: list[ProviderEntry] = Field(default_factory=list, max_length=50)
    agents: list[AgentSettings] = Field(default_factory=_default_agents, min_length=1)
    pump: PumpSettings = PumpSettings()
    outbox: OutboxSettings = OutboxSettings()
    logging: LoggingSettings = LoggingSettings()
    telemetry: TelemetrySettings = TelemetrySettings()
    mcp_servers: McpServerList = Field(default_factory=list)
    tool_policies: list[ToolPolicySettings] = Field(default_factory=list)
    tools: ToolsSettings = ToolsSettings()
    skills: SkillsSettings = SkillsSettings()
    memory: MemorySettings = MemorySettings()
    guard: GuardSettings = GuardSettings()
    limits: LimitsSettings = LimitsSettings()
    media: MediaSettings = MediaSettings()
    transcription: TranscriptionSettings | None = None
    speech: SpeechSettings = SpeechSettings()
    subagents: SubagentSettings = SubagentSettings()
    schedules: list[ScheduleSettings] = Field(default_factory=list)
    hooks: list[HookSettings] = Field(default_factory=list, max_length=100)
    people: list[PersonSettings] = Field(default_factory=list, max_length=1000)
    channels: dict[str, dict[str, Any]] = Field(
        default_factory=lambda: {"console": {"enabled": True}}
    )

    @model_validator(mode="after")
    def _agents_consistent(self) -> Settings:
        seen: dict[str, int] = {}
        for index, agent in enumerate(self.agents):
            if agent.id in seen:
                raise ValueError(
                    f"agents[{index}].id: {agent.id!r} is already used by agents[{seen[agent.id]}]"
                )
            seen[agent.id] = index
        if self.default_agent is not None and self.default_agent not in seen:
            raise ValueError(
                f"default_agent: {self.default_agent!r} is not an agent id "
                f"(agents: {', '.join(seen)})"
            )
        return self

    @model_validator(mode="after")
    def _people_consistent(self) -> Settings:
        problem = people_problem(self.people)
        if problem is not None:
            raise ValueError(problem)
        return self

    def directory(self) -> People:
        """``[[people]]`` as the channels look senders up."""
        return People(entry.person() for entry in self.people)

    @model_validator(mode="after")
    def _speech_consistent(self) -> Settings:
        problem = self.speech.problem()
        if problem is not None:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _providers_consistent(self) -> Settings:
        if self.provider.kind == "openai" and "model" not in self.provider.model_fields_set:
            raise ValueError(f"provider.{MODEL_REQUIRED}")
        seen: dict[str, int] = {}
        for index, entry in enumerate(self.providers):
            if entry.kind == "openai" and entry.model is None:
                raise ValueError(f"providers[{index}].{MODEL_REQUIRED}")
            if entry.id in seen:
                raise ValueError(
                    f"providers[{index}].id: {entry.id!r} is already used by "
                    f"providers[{seen[entry.id]}]"
                )
            seen[entry.id] = index
        if DEFAULT_PROVIDER in seen:
            given = sorted(CONNECTION_KEYS & self.provider.model_fields_set)
            if given:
                raise ValueError(
                    f"provider.{given[0]}: providers[{seen[DEFAULT_PROVIDER]}] is the provider "
                    f"{DEFAULT_PROVIDER!r}; give its keys there, not in [provider]"
                )
        known = set(self.provider_specs())
        for index, agent in enumerate(self.agents):
            problem = chain_problem(
                index, agent.provider or DEFAULT_PROVIDER, list(agent.fallback), known
            )
            if problem is not None:
                raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _limits_consistent(self) -> Settings:
        old = "max_tool_rounds" in self.provider.model_fields_set
        new = "turn_tool_rounds" in self.limits.model_fields_set
        if old and new and self.provider.max_tool_rounds != self.limits.turn_tool_rounds:
            raise ValueError(
                "limits.turn_tool_rounds: differs from provider.max_tool_rounds (its old "
                "name); keep only limits.turn_tool_rounds"
            )
        if old and not new:
            limits = self.limits.model_copy(
                update={"turn_tool_rounds": self.provider.max_tool_rounds}
            )
            object.__setattr__(self, "limits", limits)
        if self.limits.daily_cost_usd is not None:
            table = self.limits.price_table()
            models = set()
            for agent in self.agents:
                route = self.route(agent)
                models |= {route.model, *(spec.model for spec in route.fallback)}
            for model in sorted(models):
                if table.price_of(model) is None:
                    raise ValueError(
                        f"limits.daily_cost_usd: the model {model!r} has no price; add "
                        f'[limits.prices."{model}"] with input and output (USD per million tokens)'
                    )
        return self

    @model_validator(mode="after")
    def _schedules_consistent(self) -> Settings:
        agents = {agent.id for agent in self.agents}
        seen: dict[str, int] = {}
        for index, schedule in enumerate(self.schedules):
            if schedule.id in seen:
                raise ValueError(
                    f"schedules[{index}].id: {schedule.id!r} is already used by "
                    f"schedules[{seen[schedule.id]}]"
                )
            seen[schedule.id] = index
            if schedule.agent is not None and schedule.agent not in agents:
                raise ValueError(
                    f"schedules[{index}].agent: {schedule.agent!r} is not an agent id "
                    f"(agents: {', '.join(sorted(agents))})"
                )
        return self

    @model_validator(mode="after")
    def _hooks_consistent(self) -> Settings:
        problem = hooks_problem(self.hooks, {agent.id for agent in self.agents})
        if problem is not None:
            raise ValueError(problem)
        return self

    def provider_specs(self) -> dict[str, ProviderSpec]:
        """Every provider by id: ``[provider]`` as ``default`` (unless an entry takes
        that id), then the ``[[providers]]`` entries."""
        specs = {DEFAULT_PROVIDER: self.provider.spec()}
        for entry in self.providers:
            specs[entry.id] = spec_of(entry, self.provider.model)
        return specs

    def used_provider_specs(self) -> list[ProviderSpec]:
        """The providers some agent uses (first or as a fallback), in configured order."""
        used: dict[str, ProviderSpec] = {}
        for agent in self.agents:
            for spec in self.route(agent).chain:
                used.setdefault(spec.id, spec)
        order = list(self.provider_specs())
        return sorted(used.values(), key=lambda spec: order.index(spec.id))

    def route(self, agent: AgentSettings) -> Route:
        """Where ``agent``'s model calls go (the settings are validated: ids exist)."""
        specs = self.provider_specs()
        primary = specs[agent.provider or DEFAULT_PROVIDER]
        return Route(
            primary=primary,
            model=agent.model or primary.model,
            max_output_tokens=agent.max_output_tokens or primary.max_output_tokens,
            fallback=tuple(specs[name] for name in agent.fallback),
        )

    @property
    def default_agent_id(self) -> str:
        return self.default_agent or self.agents[0].id

    def price_table(self) -> PriceTable:
        """``[limits]`` prices, with the models only the scripted provider answers for
        at nothing (it calls no model, so it costs nothing), unless priced there."""
        scripted: set[str] = set()
        real: set[str] = set()
        for agent in self.agents:
            route = self.route(agent)
            (scripted if route.primary.kind == "scripted" else real).add(route.model)
            for spec in route.fallback:
                (scripted if spec.kind == "scripted" else real).add(spec.model)
        table = self.limits.price_table()
        free = ModelPrice(input=0, output=0, cache_read=0, cache_write=0)
        priced = set(self.limits.prices)
        return PriceTable({**table.prices, **dict.fromkeys(scripted - real - priced, free)})

    def enabled_channels(self) -> list[str]:
        return [name for name, section in self.channels.items() if section.get("enabled", False)]


def build_catalog(settings: Settings) -> AgentCatalog:
    """The agent catalog a configuration describes."""
    return AgentCatalog(
        (
            AgentDefinition(
                id=AgentId(a.id),
                name=a.name,
                description=a.description,
                instructions=a.instructions,
                model=settings.route(a).model,
                max_output_tokens=settings.route(a).max_output_tokens,
                tools=tuple(a.tools),
                skills=tuple(a.skills),
                memory=MemoryPolicy(**a.memory.model_dump()),
                delegates=tuple(a.delegates),
            )
            for a in settings.agents
        ),
        default=AgentId(settings.default_agent_id),
    )
