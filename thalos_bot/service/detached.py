"""The host's side of work nobody watches: the runner's limits, the operator's
``[[schedules]]``, and the ``/status`` line of a conversation's pending schedules."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from thalos_bot.config.models import Settings
from thalos_bot.config.subagents import SubagentSettings
from thalos_bot.domain.address import Address
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.runtime.protocol import AgentRuntime
from thalos_bot.schedules.store import NewSchedule, ScheduleStorage
from thalos_bot.schedules.words import pending_line
from thalos_bot.subagents.runner import Budget, SubagentRunner

PendingSchedules = Callable[[ChannelId, ConversationId], Awaitable[str | None]]


def subagent_runner(runtime: AgentRuntime, settings: SubagentSettings) -> SubagentRunner:
    return SubagentRunner(
        runtime,
        budget=Budget(settings.max_total_tokens, settings.deadline),
        max_depth=settings.max_depth,
    )


def config_schedules(settings: Settings, catalog: AgentCatalog) -> list[NewSchedule]:
    """``[[schedules]]`` as rows for the store (validated already by the config)."""
    return [
        NewSchedule(
            owner=SecurityContext.of(job.principal, job.roles),
            agent_id=job.agent or catalog.default_id,
            task=job.task,
            deliver_to=Address.parse(job.deliver_to),
            cron=job.cron,
            at=job.at,
            timezone=job.timezone,
            id=job.id,
            origin="config",
        )
        for job in settings.schedules
    ]


async def sync_config_schedules(
    store: ScheduleStorage, settings: Settings, catalog: AgentCatalog
) -> None:
    await store.sync_config(config_schedules(settings, catalog), utc_now())


def pending_schedules(
    store: ScheduleStorage, clock: Callable[[], datetime] = utc_now
) -> PendingSchedules:
    """For ``/status``: the pending-schedules line of one conversation, if any."""

    async def line(channel_id: ChannelId, conversation_id: ConversationId) -> str | None:
        active = await store.active(deliver_to=Address(channel_id, conversation_id))
        return pending_line(active, clock())

    return line
