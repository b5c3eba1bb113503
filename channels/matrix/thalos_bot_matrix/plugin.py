"""Registers the Matrix channel under the ``thalos_bot.channels`` entry-point group."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import structlog
from olm.account import OlmAccountError
from olm.group_session import OlmGroupSessionError
from olm.session import OlmSessionError
from pydantic import BaseModel

from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_matrix import PASSWORD_ENV, cross_signing, sas
from thalos_bot_matrix.adapter import MatrixAdapter
from thalos_bot_matrix.approvals import matrix_approvals
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.crypto import Crypto
from thalos_bot_matrix.crypto_store import CryptoStore
from thalos_bot_matrix.events import latest_body
from thalos_bot_matrix.inbound import Admission
from thalos_bot_matrix.intake import MatrixFiles
from thalos_bot_matrix.recovery import RecoveryKeyError
from thalos_bot_matrix.session import Identity, sign_in
from thalos_bot_matrix.state import SyncState
from thalos_bot_matrix.sync import Syncer
from thalos_bot_matrix.wire import MatrixWire, Seal

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("matrix")


class MatrixPlugin:
    name = "matrix"

    @asynccontextmanager
    async def open(self, config: BaseModel, host: ChannelHost) -> AsyncIterator[ChannelPair]:
        assert isinstance(config, MatrixConfig)
        client = MatrixClient(config.homeserver, None, timeout=config.request_timeout)
        inlet = Inlet(CHANNEL)
        crypto: Crypto | None = None
        try:
            identity = await _signed_in(client, config, host)
            crypto = await _crypto(client, config, host, identity) if config.encryption else None
            displayname = await client.displayname(config.user_id)
            state = await SyncState.opened(host.state_dir, config.user_id, host.connection_state)
            link = Reconnecting("matrix_sync", Backoff(config.backoff_initial, config.backoff_max))
            async with anyio.create_task_group() as group:
                wire = MatrixWire(
                    client,
                    config.user_id,
                    room_min_interval=config.room_min_interval,
                    seal=None if crypto is None else _sealer(crypto, state),
                    sealed=lambda room: room in state.encrypted,
                )
                adapter = MatrixAdapter(
                    wire,
                    group,
                    channel_id=CHANNEL,
                    streaming=config.streaming,
                    backoff=(config.backoff_initial, config.backoff_max),
                )
                allowed = frozenset(config.allowed_users)
                seats = host.seats("matrix", config)
                approvals = matrix_approvals(seats, adapter.put)
                adapter.approvals = approvals

                def notify(room_id: str, text: str) -> None:
                    inlet.notify(ConversationId(room_id), text)

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
                    seats,
                    frozenset(config.rooms),
                    reply_author,
                    displayname,
                )
                intake = host.intake(
                    inlet,
                    MatrixFiles(client),
                    group,
                    text_file_max_chars=config.text_file_max_chars,
                )
                syncer = Syncer(
                    client,
                    admission,
                    intake,
                    approvals,
                    state,
                    notify=notify,
                    timeout=config.sync_timeout,
                    link=link,
                    crypto=crypto,
                )
                syncing = anyio.CancelScope()
                group.start_soon(_sync, syncer, syncing)

                def stopped() -> None:
                    syncing.cancel()  # what is not fetched yet stays with the homeserver
                    approvals.withdraw_all()  # no answer can be heard any more

                inlet.stopped = stopped
                yield ChannelPair(
                    inlet,
                    adapter,
                    f"matrix: syncing as {config.user_id}",
                    receiving=link.receiving,
                    health=link.health,
                    retrying=link.retrying,
                )
                await adapter.drain_at_shutdown(config.drain_timeout)
                group.cancel_scope.cancel()
        finally:
            inlet.close()
            if crypto is not None:
                crypto.store.close()
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
    then refused, docs/matrix.md, Encryption) when that cannot be done."""
    if identity.device_id is None:
        log.error("matrix_encryption_unavailable", reason="the homeserver named no device id")
        return None
    try:
        store = await anyio.to_thread.run_sync(
            CryptoStore.load, host.state_dir, config.user_id, identity.device_id
        )
        crypto = Crypto(client, store, config.trust)
        await crypto.start()
        allowed = frozenset(config.allowed_users)
        crypto.verifier = sas.Verifier(
            crypto, allowed, auto_confirm=config.auto_confirm_sas, state_dir=host.state_dir
        )
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
    await _cross_signing(crypto, host)
    return crypto


async def _cross_signing(crypto: Crypto, host: ChannelHost) -> None:
    """The device cross-signed (see :mod:`.cross_signing`); when that cannot be done,
    encryption goes on with an unsigned device, as before, and the log says why."""
    try:
        outcome = await cross_signing.ensure(
            crypto,
            password=os.environ.get(PASSWORD_ENV) or None,
            recovery_key=os.environ.get(cross_signing.RECOVERY_ENV) or None,
            key_file=cross_signing.recovery_key_file(host.state_dir, crypto.user_id),
        )
    except (
        cross_signing.CrossSigningError,
        RecoveryKeyError,
        MatrixError,
        UnreachableError,
        OSError,
    ) as exc:
        log.error(  # noqa: TRY400 - a known failure, no traceback
            "matrix_cross_signing_unavailable",
            reason=str(exc) if not isinstance(exc, OSError) else type(exc).__name__,
        )
        return
    log.info("matrix_cross_signing_on", outcome=outcome)


def _sealer(crypto: Crypto, state: SyncState) -> Seal:
    async def seal(room_id: str, kind: str, content: JSON) -> tuple[str, JSON]:
        if room_id not in state.encrypted:
            return kind, content
        try:
            return "m.room.encrypted", await crypto.encrypt(room_id, kind, content)
        except (OlmSessionError, OlmGroupSessionError, OlmAccountError) as exc:
            log.warning("matrix_encrypt_failed", room=room_id, error=type(exc).__name__)
            raise UnreachableError("encryption failed", maybe_sent=False) from None

    return seal


async def _sync(syncer: Syncer, scope: anyio.CancelScope) -> None:
    with scope:
        await syncer.run()


plugin = MatrixPlugin()
