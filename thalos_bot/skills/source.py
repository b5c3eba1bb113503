"""The ``skills`` tool source: ``skills__load(name)``, ``skills__read(name, path)`` and
``skills__search(query, top_k?)``.

All three are scoped to the turn's agent (``context.agent.skills`` globs). A skill outside
those globs answers byte-for-byte like a skill that never existed, so an agent cannot
probe what other agents can do; an agent with no skill globs gets the catalog's own
"no such tool" answer.

``skills__load`` returns the body in a ``<skill>`` block and, for a skill folder, a
``<skill_resources>`` block inside it: the folder's path and the files in it (bounded),
as the Agent Skills client guidance recommends. ``skills__read`` returns one text file of
that folder in a ``<skill_file>`` block; nothing is ever run. A path that leaves the
folder answers exactly like a file that does not exist (see
:mod:`~thalos_bot.skills.resources`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread
import structlog

from thalos_bot.config.skills import SkillsSettings
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.prompt_blocks import Block, BlockTag, defuse, render_block
from thalos_bot.skills.catalogue import catalogue_line
from thalos_bot.skills.fts import query_terms
from thalos_bot.skills.resources import MAX_RESOURCE_BYTES, Resource, list_files, read_file
from thalos_bot.skills.scope import allows, has_skills
from thalos_bot.skills.store import SkillStore
from thalos_bot.tools.names import natural_name
from thalos_bot.tools.source import SourceStatus, SourceTool
from thalos_bot.tools.types import ToolContext, ToolResult

log = structlog.get_logger(__name__)

SOURCE_NAME = "skills"
LOAD = "load"
READ = "read"
SEARCH = "search"
_MAX_ECHO = 80
"""A requested name or path longer than this is cut when echoed back."""

_LOAD_TOOL = SourceTool(
    LOAD,
    "Load a skill: the full text of a procedure listed in the skills catalogue, with the "
    "list of files in its folder. Call it when a skill applies to the task, before you "
    "start, and follow what it says.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name, as listed."},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
)

_READ_TOOL = SourceTool(
    READ,
    "Read one text file from a skill's folder: a path listed in the skill_resources of "
    "skills__load, relative to the skill folder (such as references/REFERENCE.md). "
    "Returns the file's text; nothing is run.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name, as listed."},
            "path": {
                "type": "string",
                "description": "The file's path, relative to the skill's folder.",
            },
        },
        "required": ["name", "path"],
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


def _echo(text: str) -> str:
    return defuse(text if len(text) <= _MAX_ECHO else text[:_MAX_ECHO] + "…")


def not_found(name: str) -> ToolResult:
    """The answer for a name the agent may not load, whether or not it exists."""
    return ToolResult(
        f"There is no skill named {_echo(name)!r}. Use skills__search to find skills by topic.",
        "error",
    )


def no_file(name: str, path: str) -> ToolResult:
    """The answer for a path that is not a readable file inside the skill's folder:
    missing, outside the folder, absolute, hidden, all alike."""
    return ToolResult(
        f"There is no file {_echo(path)!r} in the skill {name!r}. The files it has are "
        "listed when you load it with skills__load.",
        "error",
    )


def resources_block(name: str, folder: Path) -> Block:
    """``<skill_resources>``: the folder, how to read a file, and the files (bounded)."""
    listing = list_files(folder)
    lines = [
        f"Skill folder: {folder}",
        (
            "Paths in this skill are relative to that folder. Read a file with "
            f'skills__read(name="{name}", path="…"); scripts are never run.'
        ),
    ]
    lines += listing.files or ["(no other files)"]
    if not listing.complete:
        more = f"{listing.more} more " if listing.more else "more "
        lines.append(f"(… and {more}files not listed)")
    return render_block(BlockTag.SKILL_RESOURCES, lines)


def wrap(name: str, body: str, resources: Block | None = None) -> Block:
    """``body`` (markup defused) inside ``<skill name="…">`` … ``</skill>``, with the
    ``resources`` block last inside it."""
    text = body[:-1] if body.endswith("\n") else body
    return render_block(
        BlockTag.SKILL, [text] if resources is None else [text, resources], {"name": name}
    )


def _loaded_text(name: str, body: str, folder: Path | None) -> str:
    return wrap(name, body, None if folder is None else resources_block(name, folder))


def _read_result(name: str, folder: Path, requested: str) -> tuple[Resource, ToolResult]:
    found = read_file(folder, requested)
    return found, _file_result(name, requested, found)


def _file_result(name: str, requested: str, found: Resource) -> ToolResult:
    if found.kind == "text":
        block = render_block(
            BlockTag.SKILL_FILE,
            [found.text[:-1] if found.text.endswith("\n") else found.text],
            {"skill": name, "path": found.path},
        )
        return ToolResult(block)
    if found.kind == "folder":
        return ToolResult(
            f"{_echo(requested)!r} is a folder of the skill {name!r}, not a file. The files "
            "it has are listed when you load it with skills__load.",
            "error",
        )
    if found.kind == "binary":
        return ToolResult(
            f"{_echo(requested)!r} in the skill {name!r} is not a text file; skills__read "
            "returns UTF-8 text only.",
            "error",
        )
    if found.kind == "too-large":
        return ToolResult(
            f"{_echo(requested)!r} in the skill {name!r} is too large to read "
            f"({found.size:,} bytes; at most {MAX_RESOURCE_BYTES:,}).",
            "error",
        )
    return no_file(name, requested)


class SkillsToolSource:
    """A :class:`~thalos_bot.tools.source.ToolSource` over a :class:`SkillStore`."""

    result_budget = MAX_RESOURCE_BYTES + 32_000
    """One resource file (at most 256 KiB) or a skill body of that size, plus wrappers and
    the resource listing, arrive whole. A larger body (a skill file may be up to 1 MiB,
    about 250k tokens, more than a whole context window) is cut with an explicit marker:
    sent whole, it would make every request of the turn too long for the model."""

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
        self._tools = (_LOAD_TOOL, _READ_TOOL, _search_tool(max_top_k))

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
        if tool not in (LOAD, READ, SEARCH) or not has_skills(context.agent):
            # Word for word what the catalog says for a tool it does not know.
            return ToolResult(
                f"There is no tool named {natural_name(SOURCE_NAME, tool)!r}.", "error"
            )
        if tool == LOAD:
            return await self._load(arguments, context)
        if tool == READ:
            return await self._read(arguments, context)
        return await self._search(arguments, context)

    async def _load(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        name = _requested_name(arguments)
        if name is None:
            return ToolResult("skills__load needs 'name': a skill's name, as listed.", "error")
        if not allows(context.agent, name):
            return not_found(name)
        skill = await self._store.loaded(name)
        if skill is None:
            return not_found(name)
        # Listing the folder and defusing a body of up to 1 MiB take time: not on the loop.
        text = await anyio.to_thread.run_sync(_loaded_text, name, skill.body, skill.folder)
        log.info("skill-loaded", skill=name, agent=context.agent.id, session=context.session_id)
        return ToolResult(text)

    async def _read(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        name = _requested_name(arguments)
        path = arguments.get("path")
        if name is None or not isinstance(path, str) or not path.strip():
            return ToolResult(
                "skills__read needs 'name' (a skill's name, as listed) and 'path' (a file "
                "in its folder).",
                "error",
            )
        if not allows(context.agent, name):
            return not_found(name)
        skill = await self._store.loaded(name)
        if skill is None:
            return not_found(name)
        if skill.folder is None:
            return no_file(name, path)
        requested = path.strip()
        found, result = await anyio.to_thread.run_sync(_read_result, name, skill.folder, requested)
        log.info(
            "skill-file-read",
            skill=name,
            path=found.path or None,
            outcome=found.kind,
            agent=context.agent.id,
            session=context.session_id,
        )
        return result

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


def _requested_name(arguments: Mapping[str, Any]) -> str | None:
    """The ``name`` argument, NFKC-normalised as skill names are; None when unusable."""
    name = arguments.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    return unicodedata.normalize("NFKC", name.strip())
