"""Registers the Matrix channel under the ``thalos_bot.channels`` entry-point group: the
kit's engine, approvals and intake (:func:`~thalos_bot.channels.running.delivering`)
around the ``/sync`` loop, and a send-only side for replicas (:mod:`.sealing`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING

import anyio

from thalos_bot.channels.delivery.channel import rendering_for
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.channels.running import Delivering, Runtime, delivering
from thalos_bot.domain.ids import ConversationId
from thalos_bot_matrix.approvals import CHOICES, MatrixApprovals
from thalos_bot_matrix.client import MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.events import latest_body
from thalos_bot_matrix.inbound import Admission, MatrixFiles
from thalos_bot_matrix.sealing import readable, seals
from thalos_bot_matrix.session import Identity, sign_in
from thalos_bot_matrix.state import SyncState
from thalos_bot_matrix.sync import Syncer
from thalos_bot_matrix.wire import Choices, MatrixWire, room_of

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto

Served = Delivering[str, Choices, MatrixApprovals]


@asynccontextmanager
async def _open(
    config: MatrixConfig, host: ChannelHost, *, receive: bool = True
) -> AsyncIterator[ChannelPair]:
    """The channel; without ``receive``, its send-only side, with no sync loop (replicas:
    every one runs the rooms whose lease it holds), with ``encryption`` on sealed by the
    process's sync connection. Both answer over the same engine and wire."""
    client = MatrixClient(config.homeserver, None, timeout=config.request_timeout)
    files = MatrixFiles(client)
    try:
        identity = await _signed_in(client, config, host)
        state: SyncState | None = None
        if receive:
            state = await SyncState.opened(host.state_dir, config.user_id, host.connection_state)
        async with seals(client, config, host, identity, state) as (crypto, seal, sealed):
            wire = MatrixWire(
                client,
                config.user_id,
                room_min_interval=config.room_min_interval,
                seal=seal,
                sealed=sealed,
            )
            async with delivering(
                host,
                config,
                wire,
                rendering_for(
                    wire.limits, config.streaming, (config.backoff_initial, config.backoff_max)
                ),
                parse=room_of,
                private=lambda _room: False,  # an answer replies to its message, everywhere
                approvals=lambda post, seats: MatrixApprovals(
                    post, "matrix", seats, choices=CHOICES
                ),
                files=files,
            ) as served:
                if state is None:
                    yield ChannelPair(
                        served.inlet, served.adapter, f"matrix: sending as {config.user_id}"
                    )
                else:
                    yield await _syncing(config, client, served, state, crypto)
    finally:
        with anyio.CancelScope(shield=True):
            await files.aclose()
            await client.aclose()


async def _syncing(
    config: MatrixConfig,
    client: MatrixClient,
    served: Served,
    state: SyncState,
    crypto: Crypto | None,
) -> ChannelPair:
    """The sync loop started in the channel's task group, feeding its inlet."""

    async def reply_author(room_id: str, event_id: str) -> tuple[str, str] | None:
        try:
            event = await client.event(room_id, event_id)
        except (MatrixError, UnreachableError):
            return None
        event = readable(crypto, room_id, event)
        sender = event.get("sender")
        return (sender, latest_body(event)) if isinstance(sender, str) else None

    admission = Admission(
        config.user_id,
        frozenset(config.allowed_users),
        served.seats,
        frozenset(config.rooms),
        reply_author,
        await client.displayname(config.user_id),
    )
    syncer = Syncer(
        client,
        config.user_id,
        state,
        config.sync_timeout,
        config.reconnecting("matrix_sync"),
        crypto,
        admission,
        served.intake,
        served.approvals,
        notify=lambda room_id, text: served.inlet.notify(ConversationId(room_id), text),
    )
    served.inlet.taken = syncer.taken
    served.inlet.receive_until_stopped(served.group, syncer.run, name="matrix-sync")
    return served.pair(f"matrix: syncing as {config.user_id}", syncer.link)


async def _signed_in(client: MatrixClient, config: MatrixConfig, host: ChannelHost) -> Identity:
    """Sign in, waiting out a homeserver that is not reachable yet (a boot without
    network: ``matrix_homeserver_reconnecting``, the kit's backoff); a refusal is fatal
    (see :func:`sign_in`)."""
    waits = config.reconnecting("matrix_homeserver")
    while True:
        try:
            return await sign_in(client, config, host.state_dir)
        except UnreachableError as exc:
            await waits.failed(exc.reason)


plugin = Runtime(MatrixConfig, _open, partial(_open, receive=False))
