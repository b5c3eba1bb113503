"""What ``thalos-bot matrix pair`` does: the kit's flow
(:func:`~thalos_bot.channels.admission.pair_command.pair_with`) around Matrix's part, a
sync that waits for the code in a direct chat (:mod:`.pairing`)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio

from thalos_bot.channels.admission import pair_command as kit
from thalos_bot.channels.admission import pairing
from thalos_bot.config.loader import ConfigError, display_path, load_settings
from thalos_bot_matrix.client import MatrixClient, MatrixError, UnreachableError, new_txn
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.crypto import Crypto
from thalos_bot_matrix.crypto_store import CryptoStore
from thalos_bot_matrix.manifest import manifest
from thalos_bot_matrix.pairing import wait_for_code
from thalos_bot_matrix.render import message
from thalos_bot_matrix.session import sign_in
from thalos_bot_matrix.state import SyncState


@dataclass
class MatrixSide:
    config: MatrixConfig
    client: MatrixClient
    state_dir: Path
    sync_timeout: float

    crypto: Crypto | None = None
    """The bot's device, with ``encryption = true``: the chat may then be encrypted."""
    sealed: set[str] = field(default_factory=set)

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

    async def wait(self, code: pairing.PairingCode) -> kit.Found:
        state = SyncState.load(self.state_dir, self.config.user_id)
        person = await wait_for_code(
            self.client,
            self.config.user_id,
            code,
            state,
            poll_s=self.sync_timeout,
            crypto=self.crypto,
        )
        if person.encrypted:
            self.sealed.add(person.room_id)
        return kit.Found(person.user_id, person.user_id, person.room_id)

    async def tell(self, found: kit.Found) -> bool:
        assert isinstance(found.reply_to, str)
        room = found.reply_to
        try:
            kind, content = "m.room.message", message(kit.PAIRED, notice=True)
            if self.crypto is not None and room in self.sealed:
                kind, content = "m.room.encrypted", await self.crypto.encrypt(room, kind, content)
            await self.client.send(room, kind, new_txn(), content)
        except (MatrixError, UnreachableError):
            return False
        return True


async def pair(
    path: Path,
    *,
    yes: bool,
    ask: kit.Ask | None,
    show: kit.Show = kit.show_line,
    clock: pairing.Clock = time.monotonic,
    sync_timeout: float | None = None,
) -> int:
    """Pair, then add the sender to ``path``. Returns the process exit code."""
    side = partial(_side, path, sync_timeout)
    return await kit.pair_over(path, side, manifest, yes=yes, ask=ask, show=show, clock=clock)


@asynccontextmanager
async def _side(
    path: Path, sync_timeout: float | None, config: MatrixConfig
) -> AsyncIterator[MatrixSide]:
    if not config.homeserver or not config.user_id:
        first = (
            f"set homeserver and user_id under [channels.matrix] in {display_path(path)} "
            "first (the bot account's homeserver URL and its @name:server id)"
        )
        raise ConfigError([first])
    loaded = load_settings(path)
    state_dir = loaded.state_dir  # where the sync position is kept
    if loaded.settings.storage.target.kind == "postgresql":  # the replicas' keys are not touched
        config = config.model_copy(update={"encryption": False})
    client = MatrixClient(config.homeserver, None, timeout=config.request_timeout)
    poll = config.sync_timeout if sync_timeout is None else sync_timeout
    side = MatrixSide(config, client, state_dir, poll)
    try:
        yield side
    finally:
        if side.crypto is not None:
            side.crypto.store.close()
        await client.aclose()
