"""Agent definitions and the catalog users pick from with ``/new``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.ids import AgentId


@dataclass(frozen=True, slots=True)
class MemoryPolicy:
    enabled: bool = False
    top_k: int = 5
    min_score: float = 0.0
    char_budget: int = 2000


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    id: AgentId
    name: str
    description: str
    instructions: str
    model: str | None = None
    max_output_tokens: int | None = None
    tools: tuple[str, ...] = ("*",)
    skills: tuple[str, ...] = ()
    memory: MemoryPolicy = MemoryPolicy()
    delegates: tuple[str, ...] = ()
    """Globs of the agent ids this agent may hand a task to (``agents__delegate``)."""


class AgentCatalog:
    """The configured agents, in configured order, with one default."""

    def __init__(self, agents: Iterable[AgentDefinition], default: AgentId | None = None) -> None:
        self._agents: dict[AgentId, AgentDefinition] = {}
        for agent in agents:
            if agent.id in self._agents:
                raise ValueError(f"two agents share the id {agent.id!r}")
            self._agents[agent.id] = agent
        if not self._agents:
            raise ValueError("an agent catalog needs at least one agent")
        self.default_id: AgentId = default if default is not None else next(iter(self._agents))
        if self.default_id not in self._agents:
            raise ValueError(f"the default agent {self.default_id!r} is not in the catalog")

    def get(self, agent_id: str) -> AgentDefinition:
        try:
            return self._agents[AgentId(agent_id)]
        except KeyError:
            raise AgentError(
                ErrorCode.AGENT_NOT_FOUND, f"There is no agent called {agent_id!r}."
            ) from None

    def find(self, agent_id: str) -> AgentDefinition | None:
        return self._agents.get(AgentId(agent_id.lower()))

    @property
    def default(self) -> AgentDefinition:
        return self._agents[self.default_id]

    def __iter__(self) -> Iterator[AgentDefinition]:
        return iter(self._agents.values())

    def __len__(self) -> int:
        return len(self._agents)

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self._agents
