"""Registers the Matrix channel under the ``thalos_bot.channels`` entry-point group."""

from __future__ import annotations

import math
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from olm.account import OlmAccountError
from olm.group_session import OlmGroupSessionError
from olm.session import OlmSessionError
from pydantic import BaseModel

from thalos_bot.channels.admission.allowlist import Allowlist, Seat
from thalos_bot.channels.health import ChannelHealth
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.ports import InboundMessage, Notice
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext
from thalos_bot.media.transcription import Transcriber
from thalos_bot_matrix import PASSWORD_ENV, TOKEN_ENV
from thalos_bot_matrix.adapter import MatrixAdapter
from thalos_bot_matrix.approvals import MatrixApprovals
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.config import ROOM_ID, MatrixConfig
from thalos_bot_matrix.crypto import Crypto
from thalos_bot_matrix.crypto_store import CryptoStore
from thalos_bot_matrix.events import latest_body
from thalos_bot_matrix.inbound import Admission
from thalos_bot_matrix.intake import Intake
from thalos_bot_matrix.room import Seal
from thalos_bot_matrix.session import Identity, sign_in
from thalos_bot_matrix.state import SyncState
from thalos_bot_matrix.sync import Syncer

if TYPE_CHECKING:
    from thalos_bot.channels.checks import Check

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("matrix")


class MatrixSource:
    """Messages the sync loop admitted. When the pump stops reading, syncing stops too
    (what is not fetched yet stays with the homeserver for the next start), and the open
    approval questions are withdrawn."""

    def __init__(
        self,
        receive: MemoryObjectReceiveStream[InboundMessage],
        syncing: anyio.CancelScope,
        approvals: MatrixApprovals,
    ) -> None:
        self.channel_id = CHANNEL
        self._receive = receive
        self._syncing = syncing
        self._approvals = approvals

    async def messages(self) -> AsyncIterator[InboundMessage]:
        try:
            async with self._receive:
                async for message in self._receive:
                    yield message
        finally:
            self._syncing.cancel()
            self._approvals.withdraw_all()


class MatrixPlugin:
    name = "matrix"
    config_model = MatrixConfig

    def describe(self, config: BaseModel) -> str:
        assert isinstance(config, MatrixConfig)
        users = len(config.allowed_users)
        roles = ", ".join(config.roles) or "none"
        has_secret = os.environ.get(TOKEN_ENV, "").strip() or os.environ.get(PASSWORD_ENV, "")
        encryption = "on" if config.encryption else "off"
        note = "" if has_secret else f"; note: neither {TOKEN_ENV} nor {PASSWORD_ENV} is set"
        rooms = f" and {len(config.rooms)} room(s)" if config.rooms else ""
        return (
            f"direct chats{rooms} with {users} allowed user(s) on {config.homeserver or '?'} as "
            f"{config.user_id or '?'}, principal {config.principal_id!r} (roles: {roles}); "
            f"streaming: {config.streaming}; encryption: {encryption}{note}"
        )

    def required_env(self, config: BaseModel) -> list[str]:
        if os.environ.get(PASSWORD_ENV) and not os.environ.get(TOKEN_ENV):
            return [PASSWORD_ENV]
        return [TOKEN_ENV]

    def allowlist(self, config: BaseModel) -> Allowlist[str]:
        """A listed room while it is listed; a direct room (any other) while anyone is
        allowed (its id says nothing of its person, and the channel only ever joined it
        on an allowed user's invite)."""
        assert isinstance(config, MatrixConfig)
        rooms = frozenset(config.rooms)

        def seat(room: str) -> Seat[str]:
            if not ROOM_ID.match(room):
                raise ValueError(room)
            return Seat(group=room) if room in rooms else Seat()

        return Allowlist(
            frozenset(config.allowed_users),
            rooms,
            groups_key="rooms",
            group_word="room",
            locate=seat,
            transport="Matrix room",
        )

    async def doctor(self, config: BaseModel, *, offline: bool) -> list[Check]:
        from thalos_bot_matrix.doctor import matrix_checks

        assert isinstance(config, MatrixConfig)
        return await matrix_checks(config, offline=offline)

    @asynccontextmanager
    async def open(self, config: BaseModel, host: ChannelHost) -> AsyncIterator[ChannelPair]:
        assert isinstance(config, MatrixConfig)
        client = MatrixClient(config.homeserver, None, timeout=config.request_timeout)
        send, receive = anyio.create_memory_object_stream[InboundMessage](math.inf)
        try:
            identity = await _signed_in(client, config, host)
            crypto = await _crypto(client, config, host, identity) if config.encryption else None
            displayname = await client.displayname(config.user_id)
            state = SyncState.load(host.state_dir, config.user_id)
            health = ChannelHealth()
            async with anyio.create_task_group() as group:
                adapter = MatrixAdapter(
                    client,
                    group,
                    room_min_interval=config.room_min_interval,
                    backoff=(config.backoff_initial, config.backoff_max),
                    channel_id=CHANNEL,
                    live=config.streaming == "edit",
                )
                allowed = frozenset(config.allowed_users)
                approvals = MatrixApprovals(allowed, adapter.put)
                adapter.approvals = approvals
                if crypto is not None:
                    adapter.seal = _sealer(crypto, state)
                    adapter.sealed = lambda room: room in state.encrypted

                def notify(room_id: str, text: str) -> None:
                    adapter.post(ConversationId(room_id), Notice(text))

                async def reply_author(room_id: str, event_id: str) -> tuple[str, str] | None:
                    try:
                        event = await client.event(room_id, event_id)
                    except (MatrixError, UnreachableError):
                        return None
                    if crypto is not None and event.get("type") == "m.room.encrypted":
                        event = crypto.decrypt(room_id, event) or event
                    sender = event.get("sender")
                    return (sender, latest_body(event)) if isinstance(sender, str) else None

                admission = Admission(
                    CHANNEL,
                    config.user_id,
                    allowed,
                    SecurityContext.of(config.principal_id, config.roles),
                    frozenset(config.rooms),
                    reply_author,
                    displayname,
                )
                intake = Intake(
                    client,
                    notify=notify,
                    transcriber=_transcriber(host),
                    text_file_max_chars=config.text_file_max_chars,
                )
                syncer = Syncer(
                    client,
                    admission,
                    intake,
                    approvals,
                    state,
                    hand_over=lambda message: _hand_over(send, message),
                    notify=notify,
                    timeout=config.sync_timeout,
                    backoff=Backoff(config.backoff_initial, config.backoff_max),
                    health=health,
                    crypto=crypto,
                )
                syncing = anyio.CancelScope()
                group.start_soon(_sync, syncer, syncing)
                yield ChannelPair(
                    MatrixSource(receive, syncing, approvals),
                    adapter,
                    f"matrix: syncing as {config.user_id}",
                    receiving=syncer.receiving,
                    health=health,
                    retrying=syncer.failed_once,
                )
                with anyio.move_on_after(config.drain_timeout) as drain:
                    await adapter.drain()
                if drain.cancelled_caught:
                    log.error(
                        "matrix_answers_undelivered_at_shutdown", rooms=adapter.pending_rooms()
                    )
                group.cancel_scope.cancel()
        finally:
            send.close()
            with anyio.CancelScope(shield=True):
                await client.aclose()


async def _signed_in(client: MatrixClient, config: MatrixConfig, host: ChannelHost) -> Identity:
    """Sign in, waiting out a homeserver that is not reachable yet (a boot without
    network); a refusal is fatal (see :func:`sign_in`)."""
    backoff = Backoff(config.backoff_initial, config.backoff_max)
    while True:
        try:
            return await sign_in(client, config, host.state_dir)
        except UnreachableError as exc:
            wait = backoff.next_delay()
            log.warning("matrix_homeserver_unreachable", reason=exc.reason, retry_in_s=wait)
            await anyio.sleep(wait)


async def _crypto(
    client: MatrixClient, config: MatrixConfig, host: ChannelHost, identity: Identity
) -> Crypto | None:
    """The device's keys, loaded or made, and uploaded; ``None`` (encrypted rooms are
    then refused, README, Matrix, Encryption) when that cannot be done."""
    if identity.device_id is None:
        log.error("matrix_encryption_unavailable", reason="the homeserver named no device id")
        return None
    try:
        store = await anyio.to_thread.run_sync(
            CryptoStore.load, host.state_dir, config.user_id, identity.device_id
        )
        crypto = Crypto(client, store)
        await crypto.start()
    except (
        MatrixError,
        UnreachableError,
        OSError,
        OlmAccountError,
        OlmSessionError,
        OlmGroupSessionError,
        KeyError,
        TypeError,
        ValueError,
    ) as exc:
        # A homeserver that refuses the keys, or a store that cannot be read back.
        log.error(  # noqa: TRY400 - a known failure, no traceback
            "matrix_encryption_unavailable",
            reason=str(exc)
            if isinstance(exc, MatrixError | UnreachableError)
            else type(exc).__name__,
        )
        return None
    log.info("matrix_encryption_on", device=identity.device_id)
    return crypto


def _sealer(crypto: Crypto, state: SyncState) -> Seal:
    async def seal(room_id: str, kind: str, content: JSON) -> tuple[str, JSON]:
        if room_id not in state.encrypted:
            return kind, content
        try:
            return "m.room.encrypted", await crypto.encrypt(room_id, kind, content)
        except (OlmSessionError, OlmGroupSessionError, OlmAccountError) as exc:
            log.warning("matrix_encrypt_failed", room=room_id, error=type(exc).__name__)
            raise UnreachableError("encryption failed") from None

    return seal


async def _sync(syncer: Syncer, scope: anyio.CancelScope) -> None:
    with scope:
        await syncer.run()


def _transcriber(host: ChannelHost) -> Transcriber | None:
    settings = host.settings.transcription
    return Transcriber(settings) if settings is not None else None


def _hand_over(send: MemoryObjectSendStream[InboundMessage], message: InboundMessage) -> None:
    try:
        send.send_nowait(message)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        log.info("matrix_message_dropped_at_shutdown", room=message.conversation_id)


plugin = MatrixPlugin()
