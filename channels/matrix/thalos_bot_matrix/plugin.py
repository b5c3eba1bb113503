"""Registers the Matrix channel under the ``thalos_bot.channels`` entry-point group."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
import structlog
from pydantic import BaseModel

from thalos_bot.channels.delivery.channel import WireAdapter, rendering_for
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot_matrix.approvals import matrix_approvals
from thalos_bot_matrix.client import MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.events import latest_body
from thalos_bot_matrix.inbound import Admission
from thalos_bot_matrix.intake import MatrixFiles
from thalos_bot_matrix.sending import Sealing, sending
from thalos_bot_matrix.session import Identity, sign_in
from thalos_bot_matrix.state import SyncState
from thalos_bot_matrix.sync import Syncer
from thalos_bot_matrix.wire import Choices, MatrixWire, Seal, room_of

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto

log = structlog.get_logger(__name__)

CHANNEL = ChannelId("matrix")


class MatrixPlugin:
    name = "matrix"

    def __init__(self) -> None:
        self._sealings: dict[str, Sealing] = {}
        """By account: the sync connection open in this process, for its send-only
        side (:mod:`.sending`)."""

    def _sealing(self, config: MatrixConfig) -> Sealing:
        return self._sealings.setdefault(config.user_id, Sealing())

    @asynccontextmanager
    async def open_sending(
        self, config: BaseModel, host: ChannelHost
    ) -> AsyncIterator[ChannelPair]:
        """The channel without its sync loop (replicas: every one runs the rooms whose
        lease it holds; see :mod:`.sending`)."""
        assert isinstance(config, MatrixConfig)
        client = MatrixClient(config.homeserver, None, timeout=config.request_timeout)
        try:
            await _signed_in(client, config, host)
            async with sending(config, host, client, self._sealing(config)) as pair:
                yield pair
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    @asynccontextmanager
    async def open(self, config: BaseModel, host: ChannelHost) -> AsyncIterator[ChannelPair]:
        assert isinstance(config, MatrixConfig)
        client = MatrixClient(config.homeserver, None, timeout=config.request_timeout)
        inlet = Inlet(CHANNEL)
        crypto: Crypto | None = None
        try:
            identity = await _signed_in(client, config, host)
            if config.encryption:
                # Here, not at the top: mautrix's crypto (and aiohttp) load only when used.
                from thalos_bot_matrix import encryption

                crypto = await encryption.started(client, config, host, identity)
            state = await SyncState.opened(host.state_dir, config.user_id, host.connection_state)
            seal = None if crypto is None else encryption.sealer(crypto, state)
            with self._sealing(config).held(seal, state.is_encrypted):
                async with self._running(
                    config, host, client, inlet, state=state, crypto=crypto, seal=seal
                ) as pair:
                    yield pair
        finally:
            inlet.close()
            if crypto is not None:
                crypto.store.close()
            with anyio.CancelScope(shield=True):
                await client.aclose()

    @asynccontextmanager
    async def _running(
        self,
        config: MatrixConfig,
        host: ChannelHost,
        client: MatrixClient,
        inlet: Inlet,
        *,
        state: SyncState,
        crypto: Crypto | None,
        seal: Seal | None,
    ) -> AsyncIterator[ChannelPair]:
        """The sync loop and the channel's sending, over a signed-in ``client``."""
        displayname = await client.displayname(config.user_id)
        backoff = (config.backoff_initial, config.backoff_max)
        link = Reconnecting("matrix_sync", Backoff(*backoff))
        async with anyio.create_task_group() as group:
            wire = MatrixWire(
                client,
                config.user_id,
                room_min_interval=config.room_min_interval,
                seal=seal,
                sealed=state.is_encrypted,
            )
            adapter = WireAdapter[str, Choices](
                wire,
                group,
                rendering_for(wire.limits, config.streaming, backoff),
                channel_id=CHANNEL,
                parse=room_of,
                private=lambda _room: False,  # an answer replies to its message, everywhere
            )
            allowed = frozenset(config.allowed_users)
            seats = host.seats("matrix", config)
            approvals = matrix_approvals(seats, adapter.put)
            adapter.asker = approvals.ask
            if host.presses is not None:
                # Replicas: an answer to a question another replica asked is relayed.
                approvals.presses = host.presses

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
            inlet.taken = syncer.taken
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


async def _sync(syncer: Syncer, scope: anyio.CancelScope) -> None:
    try:
        with scope:
            await syncer.run()
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await syncer.keep()  # a stop mid-batch: what went to the pump is known
            except OSError as exc:
                log.warning("matrix_sync_state_not_written", error=type(exc).__name__)


plugin = MatrixPlugin()
