"""The ``memory`` tool source: remember, recall, forget and list, for the model.

The owner is always ``context.caller.id``; no argument can name another. Anonymous
callers are refused. The shared owner's records are recalled by everyone but never
written or forgotten through these tools. Another owner's id is answered exactly like
an id that does not exist.

Every tool sees the same records: the caller's records shared across their agents
(``agent IS NULL``) plus the current agent's own. ``[memory] scope`` only decides where
``remember`` files a new one, so under ``scope = "agent"`` one agent can neither recall,
list nor forget what another agent remembered for the same person.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import structlog

from thalos_bot.config.memory import MemorySettings
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.events import Info
from thalos_bot.memory.port import MemoryPort
from thalos_bot.memory.recall import recall_owners
from thalos_bot.memory.records import KINDS, MAX_TAG_CHARS, MAX_TAGS, MAX_TEXT_CHARS
from thalos_bot.memory.records import InvalidMemoryError as Invalid
from thalos_bot.memory.render import label, one_line
from thalos_bot.storage.database import DatabaseError
from thalos_bot.tools.source import SourceStatus, SourceTool
from thalos_bot.tools.types import ToolContext, ToolResult

log = structlog.get_logger(__name__)

T = TypeVar("T")
_Handler = Callable[[Mapping[str, Any], ToolContext], Awaitable[ToolResult]]

SOURCE_NAME = "memory"
ANONYMOUS = "Memory is only available to a known caller."
READ_ONLY = "This caller's memories are shared project knowledge; they cannot be changed here."
UNAVAILABLE = "Memory is unavailable right now; try again later."
NOT_SHARED = (
    "There is no shared memory people can add to here (the operator turns it on with "
    "[memory] shared_owner and shared_writes = true)."
)

_KIND_HELP = ", ".join(KINDS)

TOOLS: tuple[SourceTool, ...] = (
    SourceTool(
        "remember",
        "Save something worth knowing in later conversations: a fact about the user, a "
        "preference, a decision, something learned, or a note. Write one self-contained "
        "statement (e.g. 'Prefers metric units'). Restating something already remembered "
        "refreshes that memory instead of adding a copy.",
        {
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS},
                "kind": {"type": "string", "description": f"{_KIND_HELP} (default note)"},
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": MAX_TAG_CHARS},
                    "maxItems": MAX_TAGS,
                },
                "importance": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 5,
                    "description": "1 (trivia) to 5 (essential); default 3",
                },
                "shared": {
                    "type": "boolean",
                    "description": "file it in the household's shared memory, which "
                    "everyone recalls (only when the user asks to share it)",
                },
            },
            "required": ["text"],
            "additionalProperties": False,
        },
    ),
    SourceTool(
        "recall",
        "Search long-term memory; returns the best matches, each with its id.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 50},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    ),
    SourceTool(
        "forget",
        "Forget one memory by its id (as shown by recall or list), e.g. when the user asks "
        "you to forget something or a memory is wrong.",
        {
            "type": "object",
            "properties": {"id": {"type": "string", "minLength": 1}},
            "required": ["id"],
            "additionalProperties": False,
        },
    ),
    SourceTool(
        "list",
        "List remembered things, newest first, optionally only one kind.",
        {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "description": _KIND_HELP},
                "page": {"type": "integer", "minimum": 1},
                "shared": {
                    "type": "boolean",
                    "description": "list the household's shared memory instead",
                },
            },
            "additionalProperties": False,
        },
    ),
)


class MemoryToolSource:
    """A :class:`~thalos_bot.tools.source.ToolSource` named ``memory``."""

    def __init__(
        self,
        store: MemoryPort,
        settings: MemorySettings | None = None,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._store = store
        self._settings = settings or MemorySettings()
        self._clock = clock

    @property
    def name(self) -> str:
        return SOURCE_NAME

    def tools(self) -> Sequence[SourceTool]:
        return TOOLS if self._settings.tools else ()

    def status(self) -> SourceStatus:
        if not self._settings.tools:
            return SourceStatus("disabled", reason="[memory] tools = false")
        return SourceStatus("ready", len(TOOLS))

    async def call(
        self, tool: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        handler = self._handlers().get(tool) if self._settings.tools else None
        if handler is None:
            return ToolResult(f"There is no memory tool named {tool!r}.", "error")
        if context.caller.anonymous:
            return ToolResult(ANONYMOUS, "refused")
        try:
            return await handler(arguments, context)
        except Invalid as exc:
            return ToolResult(f"Not done: {exc}.", "error")
        except (sqlite3.Error, DatabaseError) as exc:
            log.warning("memory-tool-failed", tool=tool, error=type(exc).__name__)
            return ToolResult(UNAVAILABLE, "error")

    def _handlers(self) -> dict[str, _Handler]:
        return {
            "remember": self._remember,
            "recall": self._recall,
            "forget": self._forget,
            "list": self._list,
        }

    @property
    def _shared(self) -> str | None:
        return self._settings.shared_owner

    def _owner(self, arguments: Mapping[str, Any], context: ToolContext) -> str | None:
        """Whose memories a call is about: the caller's, or with ``shared`` the shared
        scope's (None: people may not write or list it here)."""
        if not _optional(arguments, "shared", bool):
            return context.caller.id
        return self._shared if self._settings.shared_writes else None

    async def _remember(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        _only(arguments, "text", "kind", "tags", "importance", "shared")
        if context.caller.id == self._shared:
            return ToolResult(READ_ONLY, "refused")
        owner = self._owner(arguments, context)
        if owner is None:
            return ToolResult(NOT_SHARED, "refused")
        tags = _optional(arguments, "tags", list) or []
        if not all(isinstance(t, str) for t in tags):
            raise Invalid("tags must be a list of strings")
        stored = await self._store.remember(
            owner,
            _required_text(arguments, "text"),
            kind=_optional(arguments, "kind", str),
            tags=tags,
            importance=_optional(arguments, "importance", int),
            agent=context.agent.id
            if self._settings.scope == "agent" and owner != self._shared
            else None,
        )
        record = stored.record
        said = "Already remembered; refreshed" if stored.deduped else "Remembered"
        if owner == self._shared:
            said += " for everyone"
        event = Info(
            context.session_id,
            "memory-stored",
            {"id": record.id, "kind": record.kind, "deduped": stored.deduped},
        )
        return ToolResult(f"{said} {record.id} ({record.kind}).", events=(event,))

    async def _recall(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        _only(arguments, "query", "top_k")
        query = _required_text(arguments, "query")
        top_k = _optional(arguments, "top_k", int) or 5
        if top_k < 1:
            raise Invalid("top_k must be at least 1")
        recalled = await self._store.recall(
            recall_owners(context.caller, self._shared),
            query,
            agent=context.agent.id,
            top_k=min(top_k, self._settings.max_recall),
            char_budget=self._settings.recall_char_budget,
        )
        ids = [r.record.id for r in recalled]
        characters = sum(len(r.record.text) for r in recalled)
        event = Info(context.session_id, "memory-recalled", {"ids": ids, "characters": characters})
        if not recalled:
            return ToolResult("No memories match that query.", events=(event,))
        now = self._clock()
        lines = [
            f"{n}. [{label(r.record, now, self._shared)}] {one_line(r.record.text)}"
            for n, r in enumerate(recalled, 1)
        ]
        return ToolResult("\n".join(lines), events=(event,))

    async def _forget(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        _only(arguments, "id")
        record_id = _required_text(arguments, "id")
        record = None
        if context.caller.id != self._shared:
            record = await self._store.archive(
                context.caller.id, record_id, seen_by=context.agent.id
            )
            if record is None and self._settings.shared_writes and self._shared:
                record = await self._store.archive(self._shared, record_id)
        if record is None:
            return ToolResult(f"There is no memory with the id {record_id!r}.", "error")
        event = Info(context.session_id, "memory-forgotten", {"id": record.id})
        return ToolResult(f"Forgot {record.id}.", events=(event,))

    async def _list(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        _only(arguments, "kind", "page", "shared")
        kind = _optional(arguments, "kind", str)
        kind = kind.strip().lower() if kind else None
        page = _optional(arguments, "page", int) or 1
        if page < 1:
            raise Invalid("page must be at least 1")
        size = self._settings.page_size
        owner, agent = self._owner(arguments, context), context.agent.id
        if owner is None:
            return ToolResult(NOT_SHARED, "refused")
        total = await self._store.count(owner, kind=kind, seen_by=agent)
        what = f"{kind} memories" if kind else "memories"
        if total == 0:
            return ToolResult(f"No {what} stored.")
        pages = -(-total // size)
        if page > pages:
            return ToolResult(f"There are only {pages} page(s) of {what}.")
        records = await self._store.list(
            owner, kind=kind, limit=size, offset=(page - 1) * size, seen_by=agent
        )
        now = self._clock()
        first = (page - 1) * size + 1
        head = f"{what.capitalize()} {first}-{first + len(records) - 1} of {total}"
        head += f" (page {page} of {pages}):" if pages > 1 else ":"
        lines = [f"- [{label(r, now)}] {one_line(r.text)}" for r in records]
        return ToolResult("\n".join([head, *lines]))


# --- arguments ------------------------------------------------------------------------


def _only(arguments: Mapping[str, Any], *allowed: str) -> None:
    extra = sorted(set(arguments) - set(allowed))
    if extra:
        raise Invalid(
            f"unknown argument{'s' if len(extra) > 1 else ''}: {', '.join(extra)} "
            f"(this tool takes {', '.join(allowed)})"
        )


def _required_text(arguments: Mapping[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"{name} is required and must be non-empty text")
    return value


def _optional(arguments: Mapping[str, Any], name: str, kind: type[T]) -> T | None:
    value = arguments.get(name)
    if value is None:
        return None
    # JSON has no int/bool distinction to lean on: True is not an importance.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        expected = {int: "a whole number", str: "text", list: "a list", bool: "true or false"}.get(
            kind, kind.__name__
        )
        raise Invalid(f"{name} must be {expected}")
    return value
