"""The ``schedule`` tool source: create, list and cancel the caller's schedules.

Every schedule belongs to ``context.caller`` (never to anyone a tool argument names),
runs the current agent, and delivers to the conversation the turn came from. Another
owner's schedule id is answered exactly like an id that does not exist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import structlog

from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.timing import check_cron
from thalos_bot.schedules.store import NewSchedule, ScheduleError, ScheduleStorage
from thalos_bot.schedules.words import describe, when
from thalos_bot.storage.database import DatabaseError
from thalos_bot.tools.source import SourceStatus, SourceTool
from thalos_bot.tools.types import ToolContext, ToolResult

log = structlog.get_logger(__name__)

SOURCE_NAME = "schedule"
MAX_TASK_CHARS = 10_000
MAX_PER_OWNER = 50
UNAVAILABLE = "Schedules are unavailable right now; try again later."

TOOLS: tuple[SourceTool, ...] = (
    SourceTool(
        "create",
        "Schedule a task to run later, by you, with its answer sent to this conversation. "
        "Give 'at' (ISO 8601 with a UTC offset, e.g. 2026-05-01T09:00:00+02:00) for one "
        "run, or 'cron' (5 fields: minute hour day month weekday) with 'timezone' (IANA, "
        "e.g. Europe/Berlin) to repeat. Write the task as an instruction to yourself; "
        "the run sees only that text, not this conversation.",
        {
            "type": "object",
            "properties": {
                "task": {"type": "string", "minLength": 1, "maxLength": MAX_TASK_CHARS},
                "at": {"type": "string", "description": "ISO 8601 with offset"},
                "cron": {"type": "string", "description": "5-field cron"},
                "timezone": {"type": "string", "description": "IANA zone (default UTC)"},
            },
            "required": ["task"],
            "additionalProperties": False,
        },
    ),
    SourceTool(
        "list",
        "List your pending schedules with their ids and next run times.",
        {"type": "object", "properties": {}, "additionalProperties": False},
    ),
    SourceTool(
        "cancel",
        "Cancel one of your schedules by its id (as shown by list).",
        {
            "type": "object",
            "properties": {"id": {"type": "string", "minLength": 1}},
            "required": ["id"],
            "additionalProperties": False,
        },
    ),
)

_Handler = Callable[[Mapping[str, Any], ToolContext], Awaitable[ToolResult]]


class _InvalidError(Exception):
    pass


class ScheduleToolSource:
    """A :class:`~thalos_bot.tools.source.ToolSource` named ``schedule``. ``on_change``
    is called after a create or cancel (the scheduler wakes up)."""

    def __init__(
        self,
        store: ScheduleStorage,
        *,
        clock: Callable[[], datetime] = utc_now,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self.on_change = on_change

    @property
    def name(self) -> str:
        return SOURCE_NAME

    def tools(self) -> Sequence[SourceTool]:
        return TOOLS

    def status(self) -> SourceStatus:
        return SourceStatus("ready", len(TOOLS))

    async def call(
        self, tool: str, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        handler: _Handler | None = {
            "create": self._create,
            "list": self._list,
            "cancel": self._cancel,
        }.get(tool)
        if handler is None:
            return ToolResult(f"There is no schedule tool named {tool!r}.", "error")
        if context.caller.anonymous:
            return ToolResult("Schedules are only available to a known caller.", "refused")
        try:
            return await handler(arguments, context)
        except _InvalidError as exc:
            return ToolResult(f"Not done: {exc}.", "error")
        except DatabaseError as exc:
            log.warning("schedule-tool-failed", tool=tool, error=type(exc).__name__)
            return ToolResult(UNAVAILABLE, "error")

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    async def _create(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        _only(arguments, "task", "at", "cron", "timezone")
        if context.reply_to is None:
            return ToolResult(
                "Not done: a schedule can only be made from a conversation.", "refused"
            )
        task = arguments.get("task")
        if not isinstance(task, str) or not task.strip() or len(task) > MAX_TASK_CHARS:
            raise _InvalidError(f"'task' must be text of 1 to {MAX_TASK_CHARS:,} characters")
        zone = _zone(arguments.get("timezone", "UTC"))
        at, cron = _timing(arguments)
        mine = await self._store.active(owner=context.caller.id)
        if len(mine) >= MAX_PER_OWNER:
            raise _InvalidError(f"you already have {MAX_PER_OWNER} schedules; cancel some first")
        now = self._clock()
        try:
            created = await self._store.create(
                NewSchedule(
                    owner=context.caller,
                    agent_id=context.agent.id,
                    task=task,
                    deliver_to=context.reply_to,
                    cron=cron,
                    at=at,
                    timezone=zone,
                ),
                now,
            )
        except ScheduleError as exc:
            raise _InvalidError(str(exc).rstrip(".")) from None
        self._changed()
        assert created.next_run is not None
        log.info("schedule-created", schedule=created.id, owner=context.caller.id, cron=cron)
        return ToolResult(
            f"Scheduled {created.id} ({created.timing}); next run "
            f"{when(created.next_run, zone, now)}."
        )

    async def _list(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        _only(arguments)
        mine = [
            s
            for s in await self._store.listing()
            if s.owner == context.caller.id and s.state in {"active", "paused"}
        ]
        if not mine:
            return ToolResult("You have no pending schedules.")
        now = self._clock()
        return ToolResult(
            "\n".join(
                describe(s, now) + (" (paused by the owner)" if s.state == "paused" else "")
                for s in mine
            )
        )

    async def _cancel(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        _only(arguments, "id")
        schedule_id = arguments.get("id")
        if not isinstance(schedule_id, str) or not schedule_id.strip():
            raise _InvalidError("'id' must be a schedule id")
        if not await self._store.cancel(schedule_id.strip(), owner=context.caller.id):
            return ToolResult(f"There is no pending schedule {schedule_id!r}.", "error")
        self._changed()
        return ToolResult(f"Cancelled {schedule_id.strip()}.")


def _only(arguments: Mapping[str, Any], *allowed: str) -> None:
    extra = sorted(set(arguments) - set(allowed))
    if extra:
        raise _InvalidError(f"unexpected argument(s): {', '.join(extra)}")


def _zone(value: object) -> str:
    if not isinstance(value, str):
        raise _InvalidError("'timezone' must be an IANA zone name such as Europe/Berlin")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise _InvalidError(f"{value!r} is not an IANA time zone (e.g. Europe/Berlin)") from None
    return value


def _timing(arguments: Mapping[str, Any]) -> tuple[datetime | None, str | None]:
    at_raw, cron = arguments.get("at"), arguments.get("cron")
    if (at_raw is None) == (cron is None):
        raise _InvalidError("give exactly one of 'at' (one run) or 'cron' (repeating)")
    if cron is not None:
        if not isinstance(cron, str):
            raise _InvalidError("'cron' must be a 5-field cron expression")
        try:
            check_cron(cron)
        except ValueError as exc:
            raise _InvalidError(str(exc)) from None
        return None, cron
    if not isinstance(at_raw, str):
        raise _InvalidError("'at' must be an ISO 8601 time with an offset")
    try:
        at = datetime.fromisoformat(at_raw)
    except ValueError:
        raise _InvalidError(f"{at_raw!r} is not an ISO 8601 time") from None
    if at.tzinfo is None:
        raise _InvalidError("'at' needs a UTC offset, e.g. 2026-05-01T09:00:00+02:00")
    return at, None
