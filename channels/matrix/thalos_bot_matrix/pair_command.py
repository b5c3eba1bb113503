"""``thalos-bot matrix pair``: the kit's flow
(:func:`~thalos_bot.channels.admission.pair_command.pair_command`) around Matrix's part,
a sync that waits for the code in a direct chat.

While it waits it joins direct-chat invites from anyone, since the person is not allowed
yet, but answers nobody: a wrong code, a stranger, a room message are all ignored
without a word. The sender of the right code in a direct chat is the one; every other
room joined meanwhile is left again. The sync position reached is kept, so the daemon
never sees (and answers) what pairing read, nor forgets a room it learned is
encrypted. The sync is the daemon's loop (:class:`~.sync.SyncLoop`), so a homeserver
down is asked again after a backoff, and with encryption on the chat may be encrypted:
the batch's room keys are taken and the code decrypted as the daemon does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import anyio
import structlog

from thalos_bot.channels.admission import pair_command as kit
from thalos_bot.channels.admission import pairing
from thalos_bot.config.loader import ConfigError, display_path, load_settings
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError, new_txn
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.encryption import paired, sealer
from thalos_bot_matrix.events import content_of, strip_reply_fallback, text_field
from thalos_bot_matrix.manifest import manifest
from thalos_bot_matrix.render import message
from thalos_bot_matrix.sealing import readable
from thalos_bot_matrix.session import sign_in
from thalos_bot_matrix.state import SyncState
from thalos_bot_matrix.sync import MESSAGE, SyncLoop

log = structlog.get_logger(__name__)


@dataclass(eq=False)
class MatrixSide(SyncLoop):
    """Matrix's part of pairing, whose wait is the daemon's sync loop reading for the
    code alone: direct-chat invites from anyone joined, the first to send the code in
    one of them found."""

    config: MatrixConfig
    state_dir: Path
    code: pairing.PairingCode | None = None
    found: kit.Found | None = None
    rooms: set[str] = field(default_factory=set)
    """Direct rooms joined while waiting: left again, but for the one the code came in."""

    @classmethod
    async def opened(cls, config: MatrixConfig, client: MatrixClient, state_dir: Path) -> Self:
        """The side syncing from the daemon's position (kept in ``state_dir``)."""
        state = await SyncState.opened(state_dir, config.user_id)
        link = config.reconnecting("matrix_pairing")
        me, timeout = config.user_id, config.sync_timeout
        return cls(client, me, state, timeout, link, None, config, state_dir)

    async def reach(self) -> str:
        config = self.config
        try:
            identity = await sign_in(self.client, config, self.state_dir)
            self.crypto = await paired(self.client, config, self.state_dir, identity)
        except UnreachableError as exc:
            raise pairing.PairingError(
                f"the homeserver cannot be reached at {config.homeserver}: {exc.reason}"
            ) from None
        off = "" if self.crypto is not None else " (with encryption off)"
        return f"{config.user_id} in a direct chat{off}"

    async def wait(self, code: pairing.PairingCode) -> kit.Found | None:
        """Sync until someone sends ``code`` in a direct chat (None: it expired)."""
        self.code = code
        try:
            with anyio.move_on_after(code.remaining):
                await self.run()
        finally:
            with anyio.CancelScope(shield=True):
                for room_id in self.rooms:
                    try:
                        await self.client.leave(room_id)
                    except (MatrixError, UnreachableError):
                        log.info("matrix_pairing_leave_failed", room=room_id)
        return self.found

    async def refused(self, exc: MatrixError) -> None:
        """A 429 is waited out (its own wait, as the daemon does); any other refusal
        ends pairing with the homeserver's reason."""
        if not exc.rate_limited:
            raise pairing.PairingError(f"the homeserver refused to sync ({exc.errcode})")
        await super().refused(exc)

    async def _invited(self, room_id: str, sender: str | None, direct: bool, sealed: bool) -> None:
        taken = sender is not None and direct  # from anyone: nobody is allowed yet
        if taken and await self._join(room_id, direct=True, encrypted=sealed):
            self.rooms.add(room_id)

    async def _event(self, room_id: str, event: JSON) -> None:
        sender, code = event.get("sender"), self.code
        if code is None or self.done or room_id not in self.rooms or sender == self.me:
            return
        event = readable(self.crypto, room_id, event)
        body = strip_reply_fallback(text_field(content_of(event), "body"))
        if event.get("type") == MESSAGE and isinstance(sender, str) and code.redeem(body):
            self.found = kit.Found(sender, sender, room_id)
            self.rooms.discard(room_id)
            self.done = True

    async def tell(self, found: kit.Found) -> bool:
        return await kit.told(self._send(str(found.reply_to)), (MatrixError, UnreachableError))

    async def _send(self, room: str) -> None:
        kind, content = "m.room.message", message(kit.PAIRED, notice=True)
        if self.crypto is not None:  # sealed when the room is encrypted, as the daemon does
            kind, content = await sealer(self.crypto, self.state)(room, kind, content)
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
    side = await MatrixSide.opened(config, client, loaded.state_dir)
    try:
        yield side
    finally:
        if side.crypto is not None:
            side.crypto.store.close()
        await client.aclose()


pair = kit.pair_command(_side, manifest, with_path=True)
"""Pair, then add the sender to the ``bot.toml`` named. Returns the process exit code."""
