"""``thalos-bot matrix pair``: the kit's flow
(:func:`~thalos_bot.channels.admission.pair_command.pair_command`) around Matrix's part,
a sync that waits for the code in a direct chat.

While it waits it joins direct-chat invites from anyone, since the person is not allowed
yet, but answers nobody: a wrong code, a stranger, a room message are all ignored
without a word. The sender of the right code in a direct chat is the one; every other
room joined meanwhile is left again. The sync position reached is kept, so the daemon
never sees (and answers) what pairing read. With encryption on, the chat may be
encrypted: the batch's room keys are taken and the code decrypted as the daemon does
(:mod:`.crypto`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import structlog

from thalos_bot.channels.admission import pair_command as kit
from thalos_bot.channels.admission import pairing
from thalos_bot.config.loader import ConfigError, display_path, load_settings
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError, new_txn
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.crypto import Crypto
from thalos_bot_matrix.crypto_store import CryptoStore
from thalos_bot_matrix.events import (
    content_of,
    events_in,
    invite_sender,
    rooms_in,
    strip_reply_fallback,
    text_field,
)
from thalos_bot_matrix.manifest import manifest
from thalos_bot_matrix.render import message
from thalos_bot_matrix.session import sign_in
from thalos_bot_matrix.state import SyncState
from thalos_bot_matrix.sync import FILTER

log = structlog.get_logger(__name__)


@dataclass
class MatrixSide:
    config: MatrixConfig
    client: MatrixClient
    state_dir: Path

    crypto: Crypto | None = None
    """The bot's device, with ``encryption = true``: the chat may then be encrypted."""
    sealed: set[str] = field(default_factory=set)
    joined: set[str] = field(default_factory=set)
    """Direct rooms joined while waiting: left again, but for the one the code came in."""

    async def reach(self) -> str:
        config = self.config
        try:
            identity = await sign_in(self.client, config, self.state_dir)
            if config.encryption and identity.device_id is not None:
                store = await anyio.to_thread.run_sync(
                    CryptoStore.load, self.state_dir, config.user_id, identity.device_id
                )
                self.crypto = Crypto(self.client, store, config.trust)
                await self.crypto.start()
        except UnreachableError as exc:
            raise pairing.PairingError(
                f"the homeserver cannot be reached at {config.homeserver}: {exc.reason}"
            ) from None
        off = "" if self.crypto is not None else " (with encryption off)"
        return f"{config.user_id} in a direct chat{off}"

    async def wait(self, code: pairing.PairingCode) -> kit.Found | None:
        """Sync until someone sends ``code`` in a direct chat (None: it expired)."""
        me = self.config.user_id
        state = await SyncState.opened(self.state_dir, me)
        try:
            while not code.expired:
                try:
                    batch = await self.client.sync(
                        state.next_batch, self.config.sync_timeout, FILTER
                    )
                except UnreachableError:
                    continue
                except MatrixError as exc:
                    refused = f"the homeserver refused to sync ({exc.errcode})"
                    raise pairing.PairingError(refused) from None
                if self.crypto is not None:
                    await self.crypto.on_sync(batch)
                await self._join_invites(batch)
                found = None if state.next_batch is None else self._sent(batch, code)
                token = batch.get("next_batch")
                if isinstance(token, str):
                    state.next_batch = token
                if found is not None:
                    sender, room_id = found
                    self.joined.discard(room_id)
                    return kit.Found(sender, sender, room_id)
            return None
        finally:
            for room_id in self.joined:
                try:
                    await self.client.leave(room_id)
                except (MatrixError, UnreachableError):
                    log.info("matrix_pairing_leave_failed", room=room_id)
            await state.save(me)

    async def _join_invites(self, batch: JSON) -> None:
        for room_id, room in rooms_in(batch, "invite"):
            sender, direct, _encrypted = invite_sender(room, self.config.user_id)
            if sender is not None and direct:
                try:
                    await self.client.join(room_id)
                except (MatrixError, UnreachableError):
                    continue
                self.joined.add(room_id)

    def _sent(self, batch: JSON, code: pairing.PairingCode) -> tuple[str, str] | None:
        """Who sent ``code`` in a direct room joined meanwhile, and where."""
        for room_id, room in rooms_in(batch, "join"):
            for event in events_in(room, "timeline"):
                sealed = event.get("type") == "m.room.encrypted"
                if sealed and self.crypto is not None:
                    event = self.crypto.decrypt(room_id, event) or event  # noqa: PLW2901
                sender = event.get("sender")
                if event.get("type") != "m.room.message" or not isinstance(sender, str):
                    continue
                if sender == self.config.user_id or room_id not in self.joined:
                    continue
                if code.redeem(strip_reply_fallback(text_field(content_of(event), "body"))):
                    if sealed:
                        self.sealed.add(room_id)
                    return sender, room_id
        return None

    async def tell(self, found: kit.Found) -> bool:
        return await kit.told(self._send(str(found.reply_to)), (MatrixError, UnreachableError))

    async def _send(self, room: str) -> None:
        kind, content = "m.room.message", message(kit.PAIRED, notice=True)
        if self.crypto is not None and room in self.sealed:
            kind, content = "m.room.encrypted", await self.crypto.encrypt(room, kind, content)
        await self.client.send(room, kind, new_txn(), content)


@asynccontextmanager
async def _side(config: MatrixConfig, *, path: Path) -> AsyncIterator[MatrixSide]:
    if not config.homeserver or not config.user_id:
        first = (
            f"set homeserver and user_id under [channels.matrix] in {display_path(path)} "
            "first (the bot account's homeserver URL and its @name:server id)"
        )
        raise ConfigError([first])
    loaded = load_settings(path)
    if loaded.settings.storage.target.kind == "postgresql":  # the replicas' keys are not touched
        config = config.model_copy(update={"encryption": False})
    client = MatrixClient(config.homeserver, None, timeout=config.request_timeout)
    side = MatrixSide(config, client, loaded.state_dir)  # the sync position kept there
    try:
        yield side
    finally:
        if side.crypto is not None:
            side.crypto.store.close()
        await client.aclose()


pair = kit.pair_command(_side, manifest, with_path=True)
"""Pair, then add the sender to the ``bot.toml`` named. Returns the process exit code."""
