"""The composition root: open the database, build the runtime, open the channels.

Everything the daemon holds is entered into one exit stack, so shutdown happens in the
reverse order of start-up: channels, then the runtime, the provider, the database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial

import anyio
import structlog
from anyio.abc import TaskGroup
from pydantic import BaseModel

from thalos_bot import __version__
from thalos_bot.api.openai import api_maker
from thalos_bot.channels.approvals.relay import Presses
from thalos_bot.channels.health import NotingSource
from thalos_bot.channels.ports import ChannelAdapter, ChannelSource
from thalos_bot.channels.registry import (
    ChannelAllowlists,
    ChannelHost,
    ChannelPair,
    ChannelPlugin,
    allowlists,
    discover,
    section_principals,
    validate_channels,
)
from thalos_bot.channels.settings import ChannelSettings
from thalos_bot.cluster.api_claims import PgConversationClaims
from thalos_bot.cluster.connection_holds import ConnectionHolds
from thalos_bot.cluster.connection_inbox import ConnectionInbox
from thalos_bot.cluster.connection_rows import PgConnectionRows
from thalos_bot.cluster.connections import ConnectionLease
from thalos_bot.cluster.rate_buckets import PgRateBuckets
from thalos_bot.cluster.replicas import replica_id
from thalos_bot.config.loader import ConfigError, LoadedConfig
from thalos_bot.config.models import Settings, build_catalog
from thalos_bot.config.skills import skills_base_dir
from thalos_bot.dashboard.deps import DashboardSources
from thalos_bot.dashboard.mount import dashboard_maker
from thalos_bot.domain.agents import AgentCatalog
from thalos_bot.domain.clock import utc_now
from thalos_bot.domain.ids import ChannelId
from thalos_bot.domain.people import ADMIN, RoleBook
from thalos_bot.guard.contributor import GuardedContributor
from thalos_bot.guard.guard import build_guard
from thalos_bot.hooks.intake import HookIntake
from thalos_bot.hooks.worker import HookWorker
from thalos_bot.memory.embedders import build_embedder
from thalos_bot.memory.remembering import Remembering
from thalos_bot.providers.base import ModelProvider
from thalos_bot.providers.factory import build_routes
from thalos_bot.pump.linking import Linking
from thalos_bot.pump.pump import ChannelPump
from thalos_bot.pump.speaking import Speaking
from thalos_bot.runtime.compaction import CompactionPolicy
from thalos_bot.runtime.runtime import Runtime, RuntimeSettings
from thalos_bot.schedules.projection import Projection
from thalos_bot.schedules.scheduler import Scheduler
from thalos_bot.service.anywhere import Anywhere
from thalos_bot.service.budget_notices import TellAdmins
from thalos_bot.service.clip_files import ClipFiles
from thalos_bot.service.connection_plugins import (
    holds_connection,
    refused_on_replicas,
    sending_side,
)
from thalos_bot.service.dashboard import dashboard_sources
from thalos_bot.service.detached import (
    pending_schedules,
    subagent_runner,
    sync_config_schedules,
)
from thalos_bot.service.finals import FinalsThroughOutbox
from thalos_bot.service.interrupted import tell_cut_turns
from thalos_bot.service.outbox import Outbox
from thalos_bot.service.press_relay import PressRelay
from thalos_bot.service.served import hooks_served
from thalos_bot.service.spending import spending_limits
from thalos_bot.service.standby import Standby
from thalos_bot.service.stores import Stores, open_stores
from thalos_bot.service.tool_sources import builtin_sources, detached_sources
from thalos_bot.service.warmup import WarmUp, warm_up_plan
from thalos_bot.skills.catalogue import SkillsCatalogue
from thalos_bot.skills.store import SkillStore
from thalos_bot.skills.sync import sync_skills
from thalos_bot.speech.factory import build_speaker
from thalos_bot.storage.pg.conversations import PgConversationMap
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.sqlite_conversations import SqliteConversationMap
from thalos_bot.telemetry.instrumented import TracedAdapter, TracedProvider, TracedToolCatalog
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.mcp import McpServers
from thalos_bot.tools.types import ToolCatalog

log = structlog.get_logger(__name__)

HOOKS_CHANNEL = ChannelId("web")
"""The channel whose listener serves ``[[hooks]]`` (see :mod:`thalos_bot.hooks.intake`)."""


@dataclass(frozen=True, slots=True)
class Host:
    loaded: LoadedConfig
    catalog: AgentCatalog
    stores: Stores
    provider: ModelProvider
    runtime: Runtime
    pump: ChannelPump
    channels: Sequence[ChannelPair]
    tools: SourceCatalog
    outbox: Outbox
    scheduler: Scheduler | None = None
    warm_up: WarmUp | None = None
    """What loads in the background while the host starts (see
    :mod:`thalos_bot.service.warmup`); READY waits for its ``done``."""
    dashboard: DashboardSources | None = None
    """What the dashboard reads (also handed to the channels in ``ChannelHost``)."""
    standby: Sequence[Standby] = ()
    """Replicas: the channels that hold a platform connection, open here only while
    this replica holds their connection lease (see :mod:`thalos_bot.service.standby`)."""

    @property
    def sources(self) -> list[ChannelSource]:
        """What the pump reads: each channel open for good, marking its health at each
        message (``status``), and each connection's relay (whichever opening of it is
        current)."""
        owned = {standby.channel_id for standby in self.standby}
        return [
            *(
                NotingSource(pair.source, pair.health)
                for pair in self.channels
                if pair.source.channel_id not in owned
            ),
            *(standby.source for standby in self.standby),
        ]


async def _anywhere(
    stack: AsyncExitStack,
    plugin: ChannelPlugin,
    config: BaseModel,
    *,
    host: ChannelHost,
    shared: PgDatabase,
    replica: str,
    lease_seconds: float,
    presses: Presses,
    press_within: float,
) -> Anywhere | None:
    """A connection channel's send-only side, open on this replica, and the running of
    the conversations it holds (None: the transport offers no such side)."""
    open_sending = sending_side(plugin)
    if open_sending is None:
        return None
    url = host.storage.url
    assert url is not None, "a PostgreSQL store has its url"
    pair = await stack.enter_async_context(open_sending(config, replace(host, presses=presses)))
    anywhere = Anywhere(
        shared, url, pair, replica, lease_seconds, presses=presses, press_within=press_within
    )
    await stack.enter_async_context(anywhere.running())
    return anywhere


def _channel_plan(
    loaded: LoadedConfig, only: Sequence[str] | None
) -> tuple[list[tuple[ChannelPlugin, BaseModel]], ChannelAllowlists, RoleBook]:
    """The channels to open, every configured channel's allowlist, and every
    principal's roles now."""
    plugins = discover()
    configs = validate_channels(loaded.settings, loaded.label, plugins)
    names = list(only) if only is not None else loaded.settings.enabled_channels()
    plan: list[tuple[ChannelPlugin, BaseModel]] = []
    for name in names:
        plugin = plugins.get(name)
        if plugin is None:
            raise ConfigError([f"{loaded.label}: channels.{name}: no such channel plugin"])
        config = configs.get(name) or plugin.config_model.model_validate({})
        plan.append((plugin, config))
    if not plan:
        problem = (
            f"{loaded.label}: channels: no channel is enabled; enable one, e.g. "
            "[channels.console] enabled = true"
        )
        raise ConfigError([problem])
    granted, known = section_principals(configs)
    hooks = [(hook.principal, hook.roles) for hook in loaded.settings.hooks]
    schedules = [entry.principal for entry in loaded.settings.schedules]
    roles = RoleBook(loaded.settings.directory(), [*granted, *hooks], [*known, *schedules])
    return plan, allowlists(plugins, configs), roles


def _say_who(settings: Settings, plan: Sequence[tuple[ChannelPlugin, BaseModel]]) -> None:
    """Once at start: the allowed users no person lists run as people of their own
    (since ``[[people]]``, they no longer share the section's principal)."""
    people = settings.directory()
    for plugin, config in plan:
        if not isinstance(config, ChannelSettings):
            continue
        others = [u for u in config.allowed_ids()[1:] if people.of(plugin.name, u) is None]
        if others:
            log.info(
                "people_of_their_own",
                channel=plugin.name,
                allowed_unlisted=len(others),
                note=f"each runs as {plugin.name}:<id> with no roles; only the first "
                f"allowed user runs as {config.principal_id!r}; list them in [[people]] "
                "to name them or give them roles (`thalos-bot people`)",
            )


def tool_status(catalog: SourceCatalog) -> list[str]:
    """One ``name: state`` line per tool source, for ``/status`` and the start-up log."""
    return [f"{source.name}: {source.status().describe()}" for source in catalog.sources]


def speaking_of(settings: Settings, stores: Stores) -> Speaking | None:
    """``[speech]``: the engine and each conversation's ``/voice`` (None: it is off)."""
    speaker = build_speaker(settings.speech)
    if speaker is None:
        return None
    return Speaking(speaker, settings.speech, stores.voice_modes)


@asynccontextmanager
async def open_host(
    loaded: LoadedConfig,
    *,
    channels: Sequence[str] | None = None,
    on_tick: Callable[[], object] | None = None,
) -> AsyncIterator[Host]:
    """Open everything ``loaded`` describes. ``channels`` limits which channels open
    (``thalos-bot chat`` opens only the console); by default every enabled one."""
    settings = loaded.settings
    plan, allowed, roles = _channel_plan(loaded, channels)
    _say_who(settings, plan)
    catalog = build_catalog(settings)
    async with AsyncExitStack() as stack:
        # What the first turn would otherwise load lazily starts loading first, so it
        # runs alongside the rest of start-up; a turn that comes first waits for it
        # (each part loads once). The memory built below closes the embedder.
        embedder = build_embedder(settings.memory.embeddings)
        warm_up = warm_up_plan(catalog, embedder)
        warming = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(warming.cancel_scope.cancel)
        warming.start_soon(warm_up.run, name="warm-up")
        stores = await stack.enter_async_context(open_stores(loaded))
        database = stores.local
        skills_report = await sync_skills(
            database,
            settings.skills.scanned(skills_base_dir(loaded.path)),
            skills_base_dir(loaded.path),
        )
        skill_store = SkillStore(database)
        memory = stores.memory(settings.memory, embedder)
        guard = build_guard(settings.guard)
        await stack.enter_async_context(memory.maintained())
        tracing = settings.telemetry.tracing
        routes = build_routes(settings, TracedProvider if tracing else None)
        stack.push_async_callback(routes.aclose)
        provider: ModelProvider = routes.by_agent[catalog.default_id].provider
        servers = await stack.enter_async_context(
            McpServers.start(settings.mcp_servers, settings.tools)
        )
        delegation, schedule_tools = detached_sources(catalog, stores.schedules)
        tool_catalog = SourceCatalog.from_settings(
            [
                *servers.sources,
                *builtin_sources(
                    settings,
                    memory=memory.source,
                    skills=skill_store,
                    detached=(delegation, schedule_tools),
                ),
            ],
            settings.tool_policies,
            settings.tools,
            guard=guard,
            audit=stores.audit,
            approvals=stores.approvals,
        )
        tools: ToolCatalog = TracedToolCatalog(tool_catalog) if tracing else tool_catalog
        limits = spending_limits(settings, stores.usage)
        tell_admins: TellAdmins | None = None
        if isinstance(stores.conversations, SqliteConversationMap | PgConversationMap):
            tell_admins = TellAdmins(partial(roles.holding, ADMIN), stores.conversations)
            limits.exhausted = tell_admins
        runtime = await stack.enter_async_context(
            Runtime(
                catalog=catalog,
                store=stores.sessions,
                provider=provider,
                settings=RuntimeSettings(
                    model=settings.provider.model,
                    max_output_tokens=settings.provider.max_output_tokens,
                    max_tool_rounds=settings.limits.turn_tool_rounds,
                    context_window=settings.provider.context_window,
                    max_parallel_tools=settings.tools.max_parallel_calls,
                    compaction=CompactionPolicy(**settings.provider.compaction.model_dump()),
                ),
                tools=tools,
                contributors=[
                    SkillsCatalogue.from_settings(skill_store, settings.skills),
                    GuardedContributor(memory.contributor, guard),
                ],
                limits=limits,
                media=stores.media,
                routes=routes.by_agent,
            )
        )
        runner = subagent_runner(runtime, settings.subagents)
        delegation.bind(runner)
        schedules = stores.schedules
        opened: list[ChannelPair] = []
        woken: list[Callable[[], None]] = []

        def wake_scheduler() -> None:
            for wake in woken:
                wake()

        dashboard = dashboard_sources(
            settings,
            stores,
            channels=lambda: tuple(opened),
            schedules=schedules,
            on_schedule_change=wake_scheduler,
            tool_sources=lambda: tool_catalog.sources,
            skills=skill_store,
            memory=memory,
            limits=limits,
        )
        hooks = (
            HookIntake(settings.hooks, stores.hooks, guard, catalog.default_id)
            if settings.hooks
            else None
        )
        # Replicas: the listener's limits and the API's busy conversations are held in
        # the shared store, for the whole bot.
        pg = stores.shared if isinstance(stores.shared, PgDatabase) else None
        rates = PgRateBuckets(pg) if pg is not None else None
        channel_host = ChannelHost.of(
            settings,
            catalog,
            loaded.state_dir,
            marks=stores.chat_marks,
            dashboard=dashboard_maker(dashboard),
            fence=stores.fence,
            hooks=hooks_served(hooks) if hooks is not None else None,
            api=api_maker(
                stores.api_keys,
                catalog,
                settings.directory(),
                rates=rates,
                claims=PgConversationClaims(pg) if pg is not None else None,
            ),
            logins=stores.logins,
            page_events=stores.page_events,
            rates=rates,
        )
        pairs: list[ChannelPair] = []
        standbys: list[Standby] = []
        anywheres: list[Anywhere] = []
        shared = stores.shared
        keeping: TaskGroup | None = None
        replica = stores.replica or replica_id()

        def stop_standbys() -> None:
            for standby in standbys:
                standby.stop()

        if isinstance(shared, PgDatabase):
            # A channel holding a platform connection opens on one replica at a time:
            # the keepers close theirs after everything entered below has stopped.
            keeping = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(stop_standbys)
        for plugin, config in plan:
            if (
                keeping is not None
                and isinstance(shared, PgDatabase)
                and holds_connection(plugin, config)
            ):
                refused = refused_on_replicas(plugin, config)
                if refused is not None:
                    raise refused
                lease = ConnectionLease(
                    shared, plugin.name, replica, settings.storage.connection_lease
                )
                # The channel keeps its position beside the lease, for the next owner.
                leased = replace(
                    channel_host,
                    connection_state=lease,
                    connection_rows=PgConnectionRows(shared, lease),
                )
                presses = Presses(plugin.name)
                anywhere = await _anywhere(
                    stack,
                    plugin,
                    config,
                    host=channel_host,
                    shared=shared,
                    replica=replica,
                    lease_seconds=settings.storage.connection_lease,
                    presses=presses,
                    press_within=settings.tools.approval_timeout,
                )
                if anywhere is not None:
                    # A press the connection hears for a question asked elsewhere is
                    # relayed to the replica that asked it.
                    leased = replace(leased, presses=presses)
                    # Its turns run on any replica: this one's send-only side is kept
                    # open; the connection, where it is open, only stores what it hears.
                    pairs.append(anywhere.pair)
                    anywheres.append(anywhere)
                    if stores.fence is not None:
                        stores.fence.connections[plugin.name] = anywhere.fence
                    standby = Standby(
                        ChannelId(plugin.name),
                        partial(plugin.open, config, leased),
                        lease,
                        anywhere=anywhere,
                    )
                    standbys.append(standby)
                    await keeping.start(standby.run)
                    continue
                # What it receives waits in the shared inbox until a turn is kept.
                inbox = ConnectionInbox(shared, lease)
                if stores.fence is not None:
                    stores.fence.connections[plugin.name] = inbox
                standby = Standby(
                    ChannelId(plugin.name),
                    partial(plugin.open, config, leased),
                    lease,
                    inbox,
                    ConnectionHolds(shared, plugin.name),
                )
                standbys.append(standby)
                pair: ChannelPair | None = await keeping.start(standby.run)
                if pair is not None:
                    pairs.append(pair)
            else:
                opening = channel_host
                if isinstance(shared, PgDatabase) and getattr(plugin, "answers_anywhere", False):
                    # Its questions' answers may reach any replica: relayed among them.
                    relay = PressRelay(
                        shared, Presses(plugin.name), within=settings.tools.approval_timeout
                    )
                    await stack.enter_async_context(relay.running(listen=channel_host.storage.url))
                    opening = replace(channel_host, presses=relay.presses)
                pairs.append(await stack.enter_async_context(plugin.open(config, opening)))
        opened.extend(pairs)
        adapters: dict[ChannelId, ChannelAdapter] = {
            ChannelId(pair.adapter.channel_id): (
                TracedAdapter(pair.adapter) if tracing else pair.adapter
            )
            for pair in pairs
        }
        # Pending rows go back to their channels now, before the pump reads a message.
        outbox = await stack.enter_async_context(
            Outbox(
                stores.outbox,
                {ChannelId(pair.adapter.channel_id): pair.adapter for pair in pairs},
                keep=settings.outbox.keep,
                clips=ClipFiles.in_state(loaded.state_dir),
            ).running()
        )
        if tell_admins is not None:
            tell_admins.outbox = outbox
        if stores.turns is not None:  # what a kill cut short is said before any reading
            await tell_cut_turns(stores.turns, outbox, list(adapters))
        await sync_config_schedules(schedules, settings, catalog)
        scheduler = Scheduler(
            schedules,
            runner,
            outbox,
            channels=adapters,
            allowlist=allowed,
            roles=roles.roles,
            projection=Projection(
                limits,
                stores.run_costs,
                {s.id: (s.daily_tokens, s.monthly_tokens) for s in settings.schedules},
            ),
        )
        schedule_tools.on_change = scheduler.wake
        woken.append(scheduler.wake)
        pump = ChannelPump(
            runtime=runtime,
            catalog=catalog,
            conversations=stores.conversations,
            adapters={
                channel: FinalsThroughOutbox(adapter, outbox)
                for channel, adapter in adapters.items()
            },
            settings=settings.pump,
            on_tick=on_tick,
            tool_status=lambda: tool_status(tool_catalog),
            spending=runtime.spending,
            keep_finals=True,
            awaiting_approval=tool_catalog.gate.waiting_for,
            pending_schedules=pending_schedules(schedules),
            speaking=speaking_of(settings, stores),
            budgets=limits,
            remembering=Remembering(memory.store, settings.memory),
            linking=Linking(stores.links, settings.directory(), roles.roles, utc_now),
            journal=stores.turns,
        )

        async def attach(pair: ChannelPair) -> None:
            channel = ChannelId(pair.adapter.channel_id)
            adapter = TracedAdapter(pair.adapter) if tracing else pair.adapter
            adapters[channel] = adapter
            pump.adapters[channel] = FinalsThroughOutbox(adapter, outbox)
            scheduler.channels = frozenset(adapters)
            opened.append(pair)
            await outbox.attach(channel, pair.adapter)
            scheduler.wake()

        def detach(pair: ChannelPair) -> None:
            channel = ChannelId(pair.adapter.channel_id)
            outbox.detach(channel)
            adapters.pop(channel, None)
            pump.adapters.pop(channel, None)
            scheduler.channels = frozenset(adapters)
            opened[:] = [other for other in opened if other is not pair]

        for standby in standbys:
            standby.serve(attach, detach, lambda: pump.stopping)
        for anywhere in anywheres:
            anywhere.stopping = lambda: pump.stopping
        background = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(background.cancel_scope.cancel)
        background.start_soon(scheduler.run, name="scheduler")
        if hooks is not None and HOOKS_CHANNEL in adapters:
            # Only where the hooks are served: a `thalos-bot chat` beside the daemon
            # leaves their runs to the daemon.
            worker = HookWorker(
                stores.hooks,
                runner,
                outbox,
                replica=replica,
                alone=not isinstance(shared, PgDatabase),
                allowlist=allowed,
            )
            hooks.wake = worker.wake
            background.start_soon(worker.run, name="hooks")
        elif hooks is not None:
            log.info("hooks_not_served", reason="the web channel is not open in this process")
        if settings.media.retention is not None:
            pruner = stores.media_pruner(settings.media.retention)
            background.start_soon(pruner.run, name="media-prune")
        log.info(
            "startup",
            version=__version__,
            config=loaded.label,
            database=stores.location,
            engine=stores.engine,
            providers={agent.id: settings.route(agent).describe() for agent in settings.agents},
            agents=[agent.id for agent in catalog],
            default_agent=catalog.default_id,
            channels=[pair.describe for pair in pairs],
            tools=tool_status(tool_catalog),
            skills=len(skills_report.active),
        )
        yield Host(
            loaded,
            catalog,
            stores,
            provider,
            runtime,
            pump,
            pairs,
            tool_catalog,
            outbox,
            scheduler,
            warm_up,
            dashboard,
            standbys,
        )
