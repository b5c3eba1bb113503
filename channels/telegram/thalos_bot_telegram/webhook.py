"""Webhook intake for replicas: the inbox drained by the holder of each chat's lease.

Every replica serves the listener (:mod:`thalos_bot_telegram.webhook_intake`), so a
delivery may land on any of them. Each replica LISTENs for the inbox's NOTIFY; on
hearing of a chat it tries to take that chat's lease, and the one that holds it drains
the chat's rows in ``update_id`` order into the same dispatch the poller feeds. Busy,
idle and dead sessions, /cancel and /status therefore behave exactly as with one
process: one pump sees the chat's messages in order. A /cancel delivered to another
replica reaches the holder through NOTIFY at once. Albums are assembled by the holder,
whichever replicas their parts landed on.

The leases' heartbeat and the sweep of a dead holder's chats are the kit's
(:class:`~thalos_bot.cluster.drain.InboxDrain`); a takeover that finds a turn in
progress says so once (:data:`INTERRUPTED`) instead of running it again.

``setWebhook`` is called by one replica per cluster: the one that wins an advisory
lock, and only when Telegram's registration differs from this configuration.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import psycopg
import structlog
from anyio.abc import TaskGroup
from telegram import Bot, Update
from telegram.error import TelegramError

from thalos_bot.channels.health import ChannelHealth
from thalos_bot.channels.ports import EXIT_CONFIG, ChannelFatalError
from thalos_bot.channels.secrets import secret_from_env
from thalos_bot.cluster.drain import InboxDrain
from thalos_bot.cluster.holds import ChatHolds
from thalos_bot.cluster.inbox import Inbox
from thalos_bot.cluster.leases import LeaseBook
from thalos_bot.cluster.replicas import ReplicaTable, replica_id
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot_telegram import SECRET_ENV
from thalos_bot_telegram.config import TelegramConfig
from thalos_bot_telegram.errors import describe
from thalos_bot_telegram.inbound import is_id
from thalos_bot_telegram.updates import ALLOWED_UPDATES, decode_update
from thalos_bot_telegram.webhook_intake import Listener, serving

log = structlog.get_logger(__name__)

INTERRUPTED = (
    "Your last message was interrupted while the bot moved to another server; please send it again."
)
REGISTER_LOCK = 0x7468616C6F7377  # "thalosw": who calls setWebhook
_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
"""What Telegram accepts as setWebhook's secret_token."""


def lane_of(allowed: frozenset[int]) -> Callable[[Mapping[str, Any]], str | None]:
    """The chat an update belongs to, or None when its sender is not allowed (or the
    update is not shaped as Telegram shapes one: a field of another type is no sender)."""

    def lane(body: Mapping[str, Any]) -> str | None:
        sender: object = None
        chat: object = None
        for key in ("message", "edited_message"):
            message = body.get(key)
            if isinstance(message, dict):
                sender, chat = _id(message.get("from")), _id(message.get("chat"))
                break
        query = body.get("callback_query")
        if isinstance(query, dict):
            sender = _id(query.get("from"))
            message = query.get("message")
            chat = _id(message.get("chat")) if isinstance(message, dict) else None
            chat = sender if chat is None else chat
        if not is_id(sender) or sender not in allowed or not is_id(chat):
            return None
        return str(chat)

    return lane


def _id(value: object) -> object:
    return value.get("id") if isinstance(value, dict) else None


def chat_lane(conversation: str) -> str:
    """A conversation's lane: its chat (a forum topic is ``<chat>:<thread>``)."""
    return conversation.split(":", 1)[0]


def read_secret() -> str:
    """The webhook secret, registered with the log redaction as it is read."""
    what = (
        'the webhook secret that mode = "webhook" needs (1-256 characters A-Z, a-z, 0-9, _ '
        "and -, e.g. `openssl rand -hex 32`)"
    )
    return secret_from_env(SECRET_ENV, "telegram", what, valid=_SECRET.fullmatch, shape="usable")


@dataclass
class Cluster:
    """What the plugin needs from the running intake."""

    listener: Listener
    leases: LeaseBook
    receiving: anyio.Event
    health: ChannelHealth
    port: int
    taking: anyio.CancelScope
    """Cancelled when the pump stops reading: no inbox row is taken that no turn
    would run (the next holder gets it)."""
    lost: set[str]
    """Chats whose lease this replica lost: nothing more is said there from here."""
    unanswered: dict[str, int]
    """Each chat's update taken whose chat has heard nothing since (see the fence,
    :class:`~thalos_bot.cluster.fence.LaneFence`)."""
    holds: ChatHolds | None = None
    """Where a 429's ``retry_after`` is stored for every replica to obey."""


def read_update(bot: Bot | None, update_id: int, payload: Mapping[str, Any]) -> Update | None:
    """An inbox row as an update for the dispatch (None: unreadable, and logged)."""
    decoded = decode_update(dict(payload), update_id, bot)
    if isinstance(decoded, Update):
        return decoded
    log.warning("telegram_update_unreadable", update_id=update_id, error=decoded.error)
    return None


async def register_webhook(db: PgDatabase, bot: Bot, config: TelegramConfig, secret: str) -> bool:
    """setWebhook, by the one replica that wins the advisory lock, when Telegram's
    registration differs; True when this replica called it."""
    async with db.transaction() as conn:
        cursor = await conn.execute("SELECT pg_try_advisory_xact_lock(%s) AS won", (REGISTER_LOCK,))
        row = await cursor.fetchone()
        if row is None or not row["won"]:
            return False
        try:
            info = await bot.get_webhook_info(read_timeout=config.request_timeout)
            if info.url == config.webhook_url and info.max_connections in (
                None,
                config.webhook_max_connections,
            ):
                log.info("telegram_webhook_already_set")
                return False
            await bot.set_webhook(
                url=str(config.webhook_url),
                secret_token=secret,
                max_connections=config.webhook_max_connections,
                allowed_updates=list(ALLOWED_UPDATES),
                read_timeout=config.request_timeout,
            )
        except TelegramError as exc:
            log.warning("telegram_set_webhook_failed", reason=describe(exc))
            return False
    log.info("telegram_webhook_set", max_connections=config.webhook_max_connections)
    return True


@asynccontextmanager
async def webhook_intake(
    config: TelegramConfig,
    url: str,
    bot: Bot,
    *,
    bot_id: int,
    dispatch: Callable[[Sequence[Update]], None],
    interrupted: Callable[[str], None],
    group: anyio.abc.TaskGroup,
    share: Callable[[float], None] = lambda rate: None,
    obey: Callable[[int, float], None] = lambda chat, seconds: None,
) -> AsyncIterator[Cluster]:
    """Open the store, serve the listener, drain the inbox (in ``group``), until the
    block ends; then release this replica's leases and leave the replicas table."""
    secret = read_secret()
    db = await PgDatabase.open(url, pool_size=4)
    # Its own pool: an answer to Telegram never waits behind the drains for a connection.
    try:
        intake_db = await PgDatabase.open(url, pool_size=4)
    except BaseException:
        await db.aclose()
        raise
    replica = replica_id()
    leases = LeaseBook(db, "telegram", replica, config.lease_seconds, chat_lane)
    replicas = ReplicaTable(db, replica, alive=config.lease_seconds)
    inbox = Inbox(db, bot_id)
    holds = ChatHolds(db, bot_id)
    listener = Listener(
        Inbox(intake_db, bot_id), secret, lane_of(frozenset(config.allowed_user_ids))
    )
    health = ChannelHealth()
    receiver = InboxDrain(
        url=url,
        inbox=inbox,
        leases=leases,
        replicas=replicas,
        read=partial(read_update, bot),
        hand_over=dispatch,
        interrupted=interrupted,
        lease_seconds=config.lease_seconds,
        share=share,
        rate=config.global_max_rate,
        holds=holds,
        obey=obey,
        health=health,
    )
    try:
        async with receiver.running(group) as taking:
            await replicas.beat("webhook")
            await register_webhook(db, bot, config, secret)
            async with serving(listener, config.webhook_listen, config) as port:
                try:
                    with anyio.fail_after(config.request_timeout + 10):
                        await receiver.listening.wait()
                    yield Cluster(
                        listener,
                        leases,
                        receiver.listening,
                        health,
                        port,
                        taking,
                        receiver.lost,
                        receiver.unanswered,
                        holds,
                    )
                finally:
                    listener.drain()
    finally:
        with anyio.CancelScope(shield=True):
            await intake_db.aclose()
            await db.aclose()


@asynccontextmanager
async def polling_alone(url: str, lease_seconds: float, group: TaskGroup) -> AsyncIterator[None]:
    """Polling on a shared PostgreSQL store: refuse to start beside another live replica
    (:class:`ChannelFatalError`), and heartbeat this one so that others refuse too. The
    heartbeat runs in the channel's ``group`` (this context holds no task group of its
    own, so the channel may close it from any scope)."""
    db = await PgDatabase.open(url, pool_size=2)
    replicas = ReplicaTable(db, replica_id(), alive=lease_seconds)
    try:
        others = await replicas.others()
        if others:
            raise ChannelFatalError(
                "telegram: polling with a PostgreSQL store while other replicas are running "
                f"({', '.join(others)}): Telegram allows one getUpdates consumer per bot "
                "token, so replicas must take updates by webhook; set [channels.telegram] mode "
                '= "webhook" (with webhook_url), or stop the other replicas',
                EXIT_CONFIG,
            )
        await replicas.beat("polling")
        beating = anyio.CancelScope()

        async def beat() -> None:
            with beating:
                while True:
                    await anyio.sleep(lease_seconds / 3)
                    try:
                        await replicas.beat("polling")
                    except psycopg.Error as exc:
                        log.warning("telegram_heartbeat_failed", error=type(exc).__name__)

        group.start_soon(beat)
        try:
            yield
        finally:
            beating.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await replicas.leave()
            except psycopg.Error:
                log.warning("telegram_replica_not_removed")
            await db.aclose()
