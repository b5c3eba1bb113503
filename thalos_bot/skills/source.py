"""The ``skills`` tool source: ``skills__load(name)`` and ``skills__search(query, top_k?)``.

Both are scoped to the turn's agent (``context.agent.skills`` globs). A skill outside
those globs answers byte-for-byte like a skill that never existed, so an agent cannot
probe what other agents can do; an agent with no skill globs gets the catalog's own
"no such tool" answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from thalos_bot.config.skills import SkillsSettings
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.skills.catalogue import catalogue_line
from thalos_bot.skills.escape import escape_skill_markup
from thalos_bot.skills.fts import query_terms
from thalos_bot.skills.scope import allows, has_skills
from thalos_bot.skills.store import SkillStore
from thalos_bot.tools.names import natural_name
from thalos_bot.tools.source import SourceStatus, SourceTool
from thalos_bot.tools.types import ToolContext, ToolResult

log = structlog.get_logger(__name__)

SOURCE_NAME = "skills"
LOAD = "load"
SEARCH = "search"
_MAX_ECHO = 80
"""A requested name longer than this is cut when echoed back."""

_LOAD_TOOL = SourceTool(
    LOAD,
    "Load a skill: the full text of a procedure listed in the skills catalogue. Call it "
    "when a skill applies to the task, before you start, and follow what it says.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name, as listed."},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
)


def _search_tool(max_top_k: int) -> SourceTool:
    return SourceTool(
        SEARCH,
        "Search the skills you may load by topic. Returns 'name: description' rows, best "
        "match first; load one with skills__load.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "A few words about the task."},
                "top_k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": max_top_k,
                    "description": "How many rows to return.",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    )


def not_found(name: str) -> ToolResult:
    """The answer for a name the agent may not load, whether or not it exists."""
    shown = escape_skill_markup(name if len(name) <= _MAX_ECHO else name[:_MAX_ECHO] + "…")
    return ToolResult(
        f"There is no skill named {shown!r}. Use skills__search to find skills by topic.",
        "error",
    )


def wrap(name: str, body: str) -> str:
    """``body`` (markup defused) inside ``<skill name="…">`` … ``</skill>``."""
    text = escape_skill_markup(body)
    end = "" if text.endswith("\n") else "\n"
    return f'<skill name="{name}">\n{text}{end}</skill>'


class SkillsToolSource:
    """A :class:`~thalos_bot.tools.source.ToolSource` over a :class:`SkillStore`."""

    result_budget = 70_000
    """A whole skill body (at most 64 KiB) plus its ``<skill>`` wrapper: never cut."""

    def __init__(
        self,
        store: SkillStore,
        *,
        default_top_k: int = 5,
        max_top_k: int = 20,
        overfetch: int = 4,
    ) -> None:
        self._store = store
        self._default_top_k = max(1, min(default_top_k, max_top_k))
        self._max_top_k = max_top_k
        self._overfetch = max(1, overfetch)
        self._tools = (_LOAD_TOOL, _search_tool(max_top_k))

    @classmethod
    def from_settings(cls, store: SkillStore, settings: SkillsSettings) -> SkillsToolSource:
        return cls(
            store,
            default_top_k=settings.search_top_k,
            max_top_k=settings.search_max_top_k,
            overfetch=settings.search_overfetch,
        )

    @property
    def name(self) -> str:
        return SOURCE_NAME

    def tools(self) -> Sequence[SourceTool]:
        return self._tools

    def status(self) -> SourceStatus:
        return SourceStatus("ready", len(self._tools))

    def offers_to(self, agent: AgentDefinition) -> bool:
        """Whether ``agent`` should see these tools at all: only with skill globs."""
        return has_skills(agent)

    async def call(
        self, tool: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        if tool not in (LOAD, SEARCH) or not has_skills(context.agent):
            # Word for word what the catalog says for a tool it does not know.
            return ToolResult(
                f"There is no tool named {natural_name(SOURCE_NAME, tool)!r}.", "error"
            )
        if tool == LOAD:
            return await self._load(arguments, context)
        return await self._search(arguments, context)

    async def _load(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        name = arguments.get("name")
        if not isinstance(name, str) or not name.strip():
            return ToolResult("skills__load needs 'name': a skill's name, as listed.", "error")
        if not allows(context.agent, name):
            return not_found(name)
        body = await self._store.body(name)
        if body is None:
            return not_found(name)
        log.info("skill-loaded", skill=name, agent=context.agent.id, session=context.session_id)
        return ToolResult(wrap(name, body))

    async def _search(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        query = arguments.get("query")
        if not isinstance(query, str) or not query_terms(query):
            return ToolResult("skills__search needs 'query': a few words about the task.", "error")
        top_k = arguments.get("top_k")
        if top_k is None:
            top_k = self._default_top_k
        if isinstance(top_k, float) and top_k.is_integer():
            top_k = int(top_k)
        if isinstance(top_k, bool) or not isinstance(top_k, int):
            return ToolResult("skills__search: 'top_k' must be a whole number.", "error")
        top_k = max(1, min(top_k, self._max_top_k))
        agent = context.agent
        found = await self._store.search(
            query,
            top_k,
            allowed=lambda name: allows(agent, name),
            page_size=top_k * self._overfetch,
        )
        if not found:
            return ToolResult("No skill matches that query.")
        rows = [catalogue_line(s) for s in found]
        return ToolResult("Skills that match, best first:\n" + "\n".join(rows))
