"""Turning the channel's end-to-end encryption on (``encryption = true``): the device's
store loaded or made, its keys uploaded, emoji verification set up, the device
cross-signed (:mod:`.cross_signing`), and the seal the wire puts on each event sent to
an encrypted room. Each part that cannot be done is logged with why: without the device
keys encrypted rooms are refused (docs/matrix.md, Encryption), without cross-signing
the device goes on unsigned.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import structlog
from olm.account import OlmAccountError
from olm.group_session import OlmGroupSessionError
from olm.session import OlmSessionError

from thalos_bot.channels.connection_state import ConnectionLostError
from thalos_bot.channels.registry import ChannelHost
from thalos_bot.telemetry.redact import register_secret
from thalos_bot_matrix import PASSWORD_ENV, cross_signing, crypto_shared, key_asks, sas
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.crypto import Crypto
from thalos_bot_matrix.crypto_store import CryptoStore
from thalos_bot_matrix.recovery import RecoveryKeyError
from thalos_bot_matrix.sealing import Seal
from thalos_bot_matrix.session import Identity
from thalos_bot_matrix.state import SyncState

log = structlog.get_logger(__name__)


async def started(
    client: MatrixClient, config: MatrixConfig, host: ChannelHost, identity: Identity
) -> Crypto | None:
    """The device's keys, loaded or made, and uploaded; ``None`` (encrypted rooms are
    then refused, docs/matrix.md, Encryption) when that cannot be done."""
    if identity.device_id is None:
        log.error("matrix_encryption_unavailable", reason="the homeserver named no device id")
        return None
    try:
        if host.connection_rows is not None:  # replicas: the shared store's
            store = await crypto_shared.opened(
                host.connection_rows, host.state_dir, config.user_id, identity.device_id
            )
        else:
            store = await anyio.to_thread.run_sync(
                CryptoStore.load, host.state_dir, config.user_id, identity.device_id
            )
        crypto = Crypto(client, store, config.trust)
        try:
            await crypto.start()
            allowed = frozenset(config.allowed_users)
            crypto.verifier = sas.Verifier(
                crypto, allowed, auto_confirm=config.auto_confirm_sas, state_dir=host.state_dir
            )
        except BaseException:
            store.close()  # its SQLite connection is not left open by a failed start
            raise
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
            if isinstance(exc, MatrixError | UnreachableError | crypto_shared.KeysUnreadableError)
            else type(exc).__name__,
        )
        return None
    log.info("matrix_encryption_on", device=identity.device_id)
    await _cross_signed(crypto, host)
    return crypto


async def paired(
    client: MatrixClient, config: MatrixConfig, state_dir: Path, identity: Identity
) -> Crypto | None:
    """Pairing's keys (``thalos-bot matrix pair``): the state folder's store, started
    (None with encryption off, or no device to hold keys)."""
    if not config.encryption or identity.device_id is None:
        return None
    store = await anyio.to_thread.run_sync(
        CryptoStore.load, state_dir, config.user_id, identity.device_id
    )
    crypto = Crypto(client, store, config.trust)
    try:
        await crypto.start()
    except BaseException:
        store.close()  # its SQLite connection is not left open by a failed start
        raise
    return crypto


async def _cross_signed(crypto: Crypto, host: ChannelHost) -> None:
    """The device cross-signed (see :mod:`.cross_signing`); when that cannot be done,
    encryption goes on with an unsigned device, as before, and the log says why."""
    recovery_key = os.environ.get(cross_signing.RECOVERY_ENV) or None
    register_secret(recovery_key)
    try:
        outcome = await cross_signing.ensure(
            crypto,
            password=os.environ.get(PASSWORD_ENV) or None,
            recovery_key=recovery_key,
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


def sealer(crypto: Crypto, state: SyncState) -> Seal:
    async def seal(room_id: str, kind: str, content: JSON) -> tuple[str, JSON]:
        if room_id not in state.encrypted:
            return kind, content
        try:
            return "m.room.encrypted", await crypto.encrypt(room_id, kind, content)
        except (OlmSessionError, OlmGroupSessionError, OlmAccountError, ConnectionLostError) as exc:
            log.warning("matrix_encrypt_failed", room=room_id, error=type(exc).__name__)
            raise UnreachableError("encryption failed", maybe_sent=False) from None

    return seal


async def synced(crypto: Crypto, batch: JSON) -> list[tuple[str, JSON]]:
    """A sync batch's to-device events taken (room keys, key requests, verification
    steps) before its timeline; returns the events waiting whose key just came."""
    try:
        await crypto.on_sync(batch)
    except (MatrixError, UnreachableError) as exc:
        log.warning("matrix_keys_upload_failed", error=str(exc))
    return await key_asks.ready(crypto)


async def opened(
    crypto: Crypto, room_id: str, event: JSON, sealed: bool, *, allowed: bool
) -> JSON | None:
    """A timeline event as the channel reads it: decrypted, or None when it is not for
    the channel (a key to wait for, asked for only when ``allowed`` sent it; plaintext
    in an encrypted room, never answered; a step of an emoji verification, taken)."""
    kind = event.get("type")
    if kind == "m.room.encrypted":
        decrypted = crypto.decrypt(room_id, event)
        if decrypted is None:
            await key_asks.ask(crypto, room_id, event, allowed=allowed)
            return None
        event = decrypted
    elif sealed and kind in {"m.room.message", *sas.ROOM_STEPS}:
        log.info("matrix_plaintext_in_encrypted_room_ignored", room=room_id)
        return None
    if await sas.in_room(crypto, room_id, event, encrypted=sealed):
        return None
    return event
