"""What each of the six commands does. Commands never reach the model."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

import structlog

from thalos_bot.channels import notices
from thalos_bot.channels.ports import InboundMessage, Notice
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.domain.errors import AgentError
from thalos_bot.domain.ids import ChannelId, ConversationId, SessionId
from thalos_bot.domain.people import ADMIN
from thalos_bot.memory.remembering import Remembering
from thalos_bot.pump.commands import ALLOWED_WHILE_BUSY, Command
from thalos_bot.pump.linking import Linking
from thalos_bot.pump.slots import slot_of
from thalos_bot.pump.speaking import Speaking, voice_command
from thalos_bot.runtime.limits import Spending, SpendingLimits
from thalos_bot.runtime.protocol import AgentRuntime, SessionInfo
from thalos_bot.storage.conversations import Binding, ConversationMap

SpendingSource = Callable[[SessionInfo], Awaitable[Spending | None]]
"""Tokens and estimated cost of a session and of its owner's day (``Runtime.spending``)."""
log = structlog.get_logger(__name__)

PendingSchedules = Callable[[ChannelId, ConversationId], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class CommandEnv:
    runtime: AgentRuntime
    catalog: AgentCatalog
    conversations: ConversationMap
    clock: Callable[[], datetime]
    tool_status: Callable[[], list[str]] | None = None
    """``name: state`` per tool source, shown by ``/status`` (e.g. a failed server)."""
    spending: SpendingSource | None = None
    awaiting_approval: Callable[[SessionId], list[str]] | None = None
    """The tools of a session waiting for the user's approval, shown by ``/status``."""
    pending_schedules: PendingSchedules | None = None
    """The ``/status`` line of a conversation's pending schedules (None: it has none)."""
    linking: Linking | None = None
    """``/link`` and ``/unlink`` (None: not offered here)."""
    speaking: Speaking | None = None
    """Spoken answers (None: ``[speech]`` is off)."""
    budgets: SpendingLimits | None = None
    """The daily limits, for ``/budget`` (None: no ledger here)."""
    remembering: Remembering | None = None
    """``/remember`` (None: no memory here)."""


@dataclass(frozen=True, slots=True)
class Call:
    """One command to carry out: what was typed, by whom, and their session's binding
    (``slot``: its key, see :mod:`thalos_bot.pump.slots`)."""

    command: Command
    message: InboundMessage
    env: CommandEnv
    binding: Binding | None
    slot: ConversationId


async def run_command(
    command: Command, message: InboundMessage, env: CommandEnv, *, busy: bool
) -> Notice | None:
    """Carry out ``command`` for the conversation of ``message``; return what to say."""
    if not command.known:
        return Notice(notices.unknown_command(command.word), "warning")
    if busy and command.name not in ALLOWED_WHILE_BUSY:
        return Notice(notices.busy_command(command.name), "warning")
    slot, binding = await slot_of(env.conversations, env.runtime, message)
    return await _HANDLERS[command.name](Call(command, message, env, binding, slot))


async def _new(call: Call) -> Notice:
    command, message, env, binding = call.command, call.message, call.env, call.binding
    wanted = command.argument.split()[0] if command.argument else env.catalog.default_id
    agent = env.catalog.find(wanted)
    if agent is None:
        return Notice(notices.unknown_agent(wanted, env.catalog), "warning")
    caller = message.sender.context
    if binding is not None:
        await _close_quietly(env, binding, message)
    session = await env.runtime.create_session(agent.id, caller)
    now = env.clock()
    await env.conversations.bind(Binding(message.channel_id, call.slot, session.id, agent.id, now))
    return Notice(notices.new_session(agent))


async def _end(call: Call) -> Notice:
    message, env, binding, slot = call.message, call.env, call.binding, call.slot
    if binding is None:
        return Notice(notices.no_session())
    await _close_quietly(env, binding, message)
    await env.conversations.unbind(message.channel_id, slot)
    return Notice(notices.session_ended())


async def _status(call: Call) -> Notice:
    message, env, binding = call.message, call.env, call.binding
    tools = env.tool_status() if env.tool_status is not None else []
    schedules = await _schedule_line(env, message)
    info = None if binding is None else await env.runtime.session_info(binding.session_id)
    if binding is None or info is None or info.status == "closed":
        return Notice(notices.status_unbound(env.catalog.default, tools, schedules=schedules))
    agent = env.catalog.find(info.agent_id)
    if agent is None:
        agent = env.catalog.default
    waiting = env.awaiting_approval(binding.session_id) if env.awaiting_approval else []
    return Notice(
        notices.status(
            agent,
            env.clock() - info.created_at,
            info.turns,
            info.usage.input_tokens + info.usage.cache_read_tokens + info.usage.cache_write_tokens,
            info.usage.output_tokens,
            busy=info.busy,
            tools=tools,
            context=(info.context_tokens, info.context_window),
            spending=await _spending_lines(env, info),
            schedules=schedules,
        )
        + notices.approval_wait(waiting)
    )


async def _spending_lines(env: CommandEnv, info: SessionInfo) -> list[str]:
    spent = await env.spending(info) if env.spending is not None else None
    if spent is None:
        return []
    return notices.spending(
        spent.session.total,
        spent.session_cost,
        spent.today.usage.total,
        spent.today.cost_usd,
        spent.timezone,
        daily_tokens=spent.daily_tokens,
        daily_cost=spent.daily_cost_usd,
        month=None if spent.month is None else (spent.month.usage.total, spent.month.cost_usd),
        monthly_tokens=spent.monthly_tokens,
        monthly_cost=spent.monthly_cost_usd,
    )


async def _schedule_line(env: CommandEnv, message: InboundMessage) -> str | None:
    if env.pending_schedules is None:
        return None
    try:
        return await env.pending_schedules(message.channel_id, message.conversation_id)
    except Exception:
        log.exception("status_schedules_failed")
        return None


async def _agents(call: Call) -> Notice:
    env, binding = call.env, call.binding
    current = binding.agent_id if binding is not None else None
    return Notice(notices.agents_list(env.catalog, current, env.catalog.default_id))


async def _cancel(call: Call) -> Notice | None:
    message, env, binding = call.message, call.env, call.binding
    if binding is None:
        return Notice(notices.nothing_to_cancel())
    try:
        cancelled = await env.runtime.cancel(binding.session_id, message.sender.context)
    except AgentError:
        cancelled = False
    # A successful cancel shows up as the turn's own "[cancelled]" ending.
    return None if cancelled else Notice(notices.nothing_to_cancel())


async def _help(call: Call) -> Notice:
    env, binding = call.env, call.binding
    agent = env.catalog.find(binding.agent_id) if binding is not None else None
    return Notice(notices.help_text(agent))


async def _close_quietly(env: CommandEnv, binding: Binding, message: InboundMessage) -> None:
    """Close the bound session; one that is already gone or closed is fine."""
    with contextlib.suppress(AgentError):
        await env.runtime.close_session(binding.session_id, message.sender.context)


async def _link(call: Call) -> Notice:
    command, message, env = call.command, call.message, call.env
    if env.linking is None:
        return Notice(NO_LINKING, "warning")
    return await env.linking.link(command.argument, message)


async def _unlink(call: Call) -> Notice:
    message, env = call.message, call.env
    if env.linking is None:
        return Notice(NO_LINKING, "warning")
    return await env.linking.unlink(message)


async def _voice(call: Call) -> Notice:
    command, message, env = call.command, call.message, call.env
    return await voice_command(command.argument, message, env.speaking)


async def _budget(call: Call) -> Notice:
    """``/budget``: today's (and this month's) spend against your limits; ``/budget lift
    PERSON`` (an admin): lift their limits for the rest of today."""
    limits, caller = call.env.budgets, call.message.sender.context
    if limits is None:
        return Notice("Budgets are not kept here.", "warning")
    words = call.command.argument.split()
    if not words:
        tokens, dollars = limits.daily(caller.id)
        month_tokens, month_dollars = limits.monthly(caller.id)
        day = await limits.ledger.day(caller.id, limits.today())
        monthly = month_tokens is not None or month_dollars is not None
        month = await limits.used(caller.id, "month") if monthly else None
        lines = notices.spending(
            0,
            0.0,
            day.usage.total,
            day.cost_usd,
            limits.timezone,
            daily_tokens=tokens,
            daily_cost=dollars,
            month=None if month is None else (month.usage.total, month.cost_usd),
            monthly_tokens=month_tokens,
            monthly_cost=month_dollars,
        )
        none = "" if tokens or dollars or monthly else " (no daily limit)"
        return Notice("\n".join(lines[1:]) + none)
    if words[0] != "lift" or len(words) != 2:
        return Notice(
            "/budget shows yours; an admin lifts a person's: /budget lift NAME", "warning"
        )
    if ADMIN not in caller.roles:
        return Notice("Only a person with the admin role can lift a budget.", "warning")
    who = words[1]
    lifted = await limits.lift(who)
    log.info("budget_lifted", person=who, by=caller.id, first=lifted)
    return Notice(f"{who}'s limits are lifted for the rest of today ({limits.timezone}).")


async def _remember(call: Call) -> Notice:
    """``/remember TEXT`` (yours) or ``/remember shared TEXT`` (everyone's)."""
    remembering = call.env.remembering
    if remembering is None:
        return Notice("Memory is not kept here.", "warning")
    said, stored = await remembering.command(call.command.argument, call.message.sender.context.id)
    return Notice(said, "info" if stored else "warning")


NO_LINKING = "Linking chats is not available here (it needs the daemon: thalos-bot run)."

_HANDLERS = {
    "new": _new,
    "end": _end,
    "status": _status,
    "agents": _agents,
    "cancel": _cancel,
    "help": _help,
    "link": _link,
    "unlink": _unlink,
    "voice": _voice,
    "budget": _budget,
    "remember": _remember,
}
