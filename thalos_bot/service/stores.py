"""The stores a host runs on, opened for the database ``[storage] url`` names.

One embedded SQLite file (the default) holds everything. With a PostgreSQL ``url`` the
state every replica must share lives on the server (sessions, bindings, outbox, usage,
chat marks, schedules, hook deliveries, audit, session approvals, media, memory), and
each replica keeps a SQLite file of its own in its state folder for what it derives
from its own disk: the skills mirror (skills are files, and a skill's folder is a path
on that machine; see :mod:`thalos_bot.skills.store`) and the progress of its own long
tasks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from thalos_bot.channels.logins import SharedLogins
from thalos_bot.channels.marks import ChatMarks
from thalos_bot.channels.page_events import SharedPageEvents
from thalos_bot.config.loader import LoadedConfig
from thalos_bot.config.memory import MemorySettings
from thalos_bot.hooks.store import HookStore, SqliteHookStore
from thalos_bot.media.prune import MediaPruner, Pruner
from thalos_bot.media.sqlite_store import SqliteMediaStore
from thalos_bot.media.store import MediaStore
from thalos_bot.schedules.store import ScheduleStorage, ScheduleStore
from thalos_bot.service.schema import ALL_MIGRATIONS, PG_ALL_MIGRATIONS
from thalos_bot.storage.api_keys import SqliteApiKeys
from thalos_bot.storage.audit import SqliteAudit
from thalos_bot.storage.chat_marks import SqliteChatMarks
from thalos_bot.storage.conversations import ConversationMap
from thalos_bot.storage.database import Database
from thalos_bot.storage.links import PeopleLinks, SqlitePeopleLinks
from thalos_bot.storage.outbox import OutboxStore, SqliteOutbox
from thalos_bot.storage.protocol import SessionStore
from thalos_bot.storage.run_costs import SqliteRunCosts
from thalos_bot.storage.session_approvals import SqliteSessionApprovals
from thalos_bot.storage.sqlite_conversations import SqliteConversationMap
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.storage.turn_journal import SqliteTurnJournal, TurnJournal
from thalos_bot.storage.usage import SqliteUsageLedger, UsageLedger
from thalos_bot.storage.voice_modes import SqliteVoiceModes
from thalos_bot.storage.web_events import SqlitePageEvents
from thalos_bot.storage.web_logins import SqliteLogins
from thalos_bot.tools.gate import AuditSink, SessionApprovals

if TYPE_CHECKING:
    # Only types: the dashboard package imports its pages (and MCP) when loaded, the
    # cluster and PostgreSQL modules psycopg (a SQLite daemon or command never uses it).
    from thalos_bot.cluster.leases import FenceSlot
    from thalos_bot.dashboard.deps import AuditSearch, SessionListing, SpendLedger
    from thalos_bot.memory.assembly import MemoryParts
    from thalos_bot.memory.embedding.base import Embedder
    from thalos_bot.storage.pg.database import PgDatabase

OUTBOX_CLAIM_SPAN = 60.0
"""Seconds a replica's claim on an outbox row lasts (and the head start of the replica
that wrote it); a row still pending after that is taken over, its progress kept."""


@dataclass(frozen=True, slots=True)
class Stores:
    """Every store of the host, on one engine."""

    local: Database
    """SQLite: the whole state (the default), or a replica's own file beside a shared
    PostgreSQL (skills mirror, task progress)."""
    shared: Database | PgDatabase
    """Where the shared state lives: ``local`` itself unless ``[storage] url`` names
    PostgreSQL."""
    sessions: SessionStore
    conversations: ConversationMap
    outbox: OutboxStore
    usage: UsageLedger
    chat_marks: ChatMarks
    schedules: ScheduleStorage
    audit: AuditSink
    approvals: SessionApprovals
    media: MediaStore
    listing: SessionListing
    """The sessions again, as the dashboard lists them."""
    spend: SpendLedger
    """The usage ledger again, as the dashboard plots it."""
    audit_search: AuditSearch
    """The approvals audit again, as the dashboard filters it."""
    hooks: HookStore
    """The webhook deliveries let in (dedupe and claims, shared by the replicas)."""
    links: PeopleLinks
    """Identities people linked from a chat (``/link``)."""
    voice_modes: SqliteVoiceModes
    """Each conversation's ``/voice`` choice."""
    api_keys: SqliteApiKeys
    """The OpenAI-compatible API's keys (their hashes)."""
    run_costs: SqliteRunCosts
    """What each scheduled run spent (a schedule's next run is projected from it)."""
    logins: SharedLogins
    """The web page's signing secret, logouts and one-time login codes."""
    page_events: SharedPageEvents
    """The web pages' events, numbered per conversation."""
    turns: TurnJournal | None = None
    """SQLite: the turns under way, so a start-up after a kill tells their conversations
    (replicas learn it from their conversation leases)."""
    fence: FenceSlot | None = None
    """PostgreSQL: the fence each turn's commit checks (a channel that holds
    conversation leases, Telegram in webhook mode, puts its lease book in it)."""
    replica: str | None = None
    """PostgreSQL: this process's name among the replicas, under which it claims outbox
    rows and holds its leases: a row it claimed is taken over as soon as its lease on
    the conversation ran out only if both name the same process (with two names, the
    whole claim span)."""

    def memory(self, settings: MemorySettings, embedder: Embedder) -> MemoryParts:
        """Memory's parts on the shared engine."""
        if isinstance(self.shared, Database):
            from thalos_bot.memory.assembly import build_memory

            return build_memory(self.shared, settings, embedder=embedder)
        from thalos_bot.storage.pg.memory_assembly import build_pg_memory

        return build_pg_memory(self.shared, self.local, settings, embedder=embedder)

    def media_pruner(self, retention: float) -> Pruner:
        """The background prune of the shared media table."""
        if isinstance(self.shared, Database):
            return MediaPruner(self.shared, retention)
        from thalos_bot.storage.pg.media_prune import PgMediaPruner

        return PgMediaPruner(self.shared, retention)

    @property
    def engine(self) -> str:
        return "sqlite" if isinstance(self.shared, Database) else "postgresql"

    @property
    def location(self) -> str:
        """Where the shared state is, for logs (never with a password)."""
        return self.shared.location


def sqlite_stores(database: Database) -> Stores:
    """Every store on the one SQLite ``database``."""
    return Stores(
        local=database,
        shared=database,
        sessions=SqliteSessionStore(database),
        conversations=SqliteConversationMap(database),
        outbox=SqliteOutbox(database),
        usage=SqliteUsageLedger(database),
        chat_marks=SqliteChatMarks(database),
        schedules=ScheduleStore(database),
        audit=SqliteAudit(database),
        approvals=SqliteSessionApprovals(database),
        media=SqliteMediaStore(database),
        listing=SqliteSessionStore(database),
        spend=SqliteUsageLedger(database),
        audit_search=SqliteAudit(database),
        hooks=SqliteHookStore(database),
        links=SqlitePeopleLinks(database),
        voice_modes=SqliteVoiceModes(database),
        api_keys=SqliteApiKeys(database),
        run_costs=SqliteRunCosts(database),
        logins=SqliteLogins(database),
        page_events=SqlitePageEvents(database),
        turns=SqliteTurnJournal(database),
    )


def postgres_stores(
    local: Database, shared: PgDatabase, *, replicas: bool = False, lease: float | None = None
) -> Stores:
    """The shared stores on ``shared``; ``local`` keeps what is the replica's own.
    ``replicas``: several processes send the same channels (Telegram in webhook mode;
    Slack and Discord, whose turns run on any replica), so the
    outbox rows are claimed; one process alone takes every pending row back at start.
    ``lease``: the connection lease, which paces the replicas' outbox sweeps when it is
    shorter than a quarter of the claim span."""
    from thalos_bot.cluster.leases import FenceSlot
    from thalos_bot.cluster.outbox_claims import ClaimingOutbox
    from thalos_bot.cluster.page_events import PgPageEvents
    from thalos_bot.cluster.replicas import replica_id
    from thalos_bot.cluster.web_logins import PgLogins
    from thalos_bot.storage.pg.api_keys import PgApiKeys
    from thalos_bot.storage.pg.approvals import PgAudit, PgSessionApprovals
    from thalos_bot.storage.pg.chat_marks import PgChatMarks
    from thalos_bot.storage.pg.conversations import PgConversationMap
    from thalos_bot.storage.pg.hooks import PgHookStore
    from thalos_bot.storage.pg.links import PgPeopleLinks
    from thalos_bot.storage.pg.media import PgMediaStore
    from thalos_bot.storage.pg.outbox import PgOutbox
    from thalos_bot.storage.pg.run_costs import PgRunCosts
    from thalos_bot.storage.pg.schedules import PgScheduleStore
    from thalos_bot.storage.pg.sessions import PgSessionStore
    from thalos_bot.storage.pg.usage import PgUsageLedger
    from thalos_bot.storage.pg.voice_modes import PgVoiceModes

    fence = FenceSlot()
    replica = replica_id()
    return Stores(
        local=local,
        shared=shared,
        sessions=PgSessionStore(shared, fence=fence),
        conversations=PgConversationMap(shared),
        # Replicas claim the rows they deliver (SKIP LOCKED): a starting replica never
        # takes a row another live one is sending.
        outbox=ClaimingOutbox(shared, replica, OUTBOX_CLAIM_SPAN, lease=lease)
        if replicas
        else PgOutbox(shared),
        usage=PgUsageLedger(shared),
        chat_marks=PgChatMarks(shared),
        schedules=PgScheduleStore(shared, replica if replicas else None),
        audit=PgAudit(shared),
        approvals=PgSessionApprovals(shared),
        media=PgMediaStore(shared),
        listing=PgSessionStore(shared),
        spend=PgUsageLedger(shared),
        audit_search=PgAudit(shared),
        hooks=PgHookStore(shared),
        links=PgPeopleLinks(shared),
        voice_modes=PgVoiceModes(shared),
        api_keys=PgApiKeys(shared),
        run_costs=PgRunCosts(shared),
        logins=PgLogins(shared),
        page_events=PgPageEvents(shared),
        fence=fence,
        replica=replica,
    )


@asynccontextmanager
async def open_stores(loaded: LoadedConfig) -> AsyncIterator[Stores]:
    """Open (and migrate) the databases ``loaded`` names; close them on exit. Raises
    :class:`~thalos_bot.storage.database.DatabaseError` when one cannot be used."""
    target = loaded.settings.storage.target
    async with AsyncExitStack() as stack:
        if target.kind != "postgresql":
            database = await Database.open(loaded.database_path, migrations=ALL_MIGRATIONS)
            stack.push_async_callback(database.aclose)
            yield sqlite_stores(database)
            return
        assert target.url is not None  # a postgresql target always has its url
        from thalos_bot.storage.pg.database import PgDatabase

        shared = await PgDatabase.open(
            target.url, migrations=PG_ALL_MIGRATIONS, pool_size=loaded.settings.storage.pool_size
        )
        stack.push_async_callback(shared.aclose)
        local = await Database.open(loaded.local_path, migrations=ALL_MIGRATIONS)
        stack.push_async_callback(local.aclose)
        yield postgres_stores(
            local,
            shared,
            replicas=_replicas_send(loaded),
            lease=loaded.settings.storage.connection_lease,
        )


def _replicas_send(loaded: LoadedConfig) -> bool:
    """Do several replicas send the same channel's finals, so the outbox rows must be
    claimed: Telegram in webhook mode, or a channel whose turns run on any replica
    (its manifest's ``send_side``: Slack, Discord, Matrix)."""
    from thalos_bot.channels.registry import discover

    telegram = loaded.settings.channels.get("telegram", {})
    if bool(telegram.get("enabled")) and telegram.get("mode") == "webhook":
        return True
    plugins = discover()
    return any(
        getattr(plugins.get(name), "send_side", False)
        for name in loaded.settings.enabled_channels()
    )
