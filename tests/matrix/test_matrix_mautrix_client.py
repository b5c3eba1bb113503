"""A client that sends room keys only to cross-signed devices, by its library's own rule:
mautrix's ``OlmMachine`` with ``send_keys_min_trust = CROSS_SIGNED_TOFU`` (devices
signed by their owner's self-signing key, under a master key trusted on first use), as
Element's coming default (MSC4153) does. It reaches the bot, whose device is
cross-signed, and the bot answers; against a bot account with no cross-signing, the
same client gives the bot's device no key."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mautrix.client import Client
from mautrix.client.state_store import MemoryStateStore
from mautrix.crypto import OlmMachine
from mautrix.crypto.store import MemoryCryptoStore
from mautrix.crypto.store import StateStore as CryptoStateStore
from mautrix.types import (
    DeviceID,
    EncryptionAlgorithm,
    Membership,
    RoomEncryptionStateEventContent,
    RoomID,
    TrustState,
    UserID,
)
from mautrix.util.logging.trace import TraceLogger

from tests.matrix.accounts import Account, register, unique
from tests.matrix.bot import running_bot
from tests.matrix.e2ee_human import EncryptingHuman
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix.cross_signing import RECOVERY_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class _State(MemoryStateStore, CryptoStateStore):
    """mautrix's memory state store, with what its crypto asks beside (the two bases
    disagree on whether ``is_encrypted`` may answer ``None``)."""

    async def is_encrypted(self, room_id: RoomID) -> bool:
        return bool(await MemoryStateStore.is_encrypted(self, room_id))

    async def find_shared_rooms(self, user_id: UserID) -> list[RoomID]:
        return [room for room, members in self.members.items() if user_id in members]


@pytest.fixture(autouse=True)
def _trace_loggers() -> Iterator[None]:
    """mautrix logs through its ``TraceLogger`` (``log.trace``), the class it sets at
    import. An in-process daemon started earlier in this worker configured structlog,
    whose ``LoggerFactory`` sets another class for every logger made after: mautrix's
    loggers made then (and cached) lack ``trace``. Its loggers are TraceLoggers here."""
    previous = logging.getLoggerClass()
    logging.setLoggerClass(TraceLogger)
    made = logging.root.manager.loggerDict.items()
    stale = [lg for name, lg in made if name.startswith("mau") and isinstance(lg, logging.Logger)]
    for logger in stale:
        logger.__class__ = TraceLogger
    try:
        yield
    finally:
        logging.setLoggerClass(previous)


@asynccontextmanager
async def _mautrix(server: SynapseServer, account: Account) -> AsyncIterator[Client]:
    state = _State()
    client = Client(
        mxid=UserID(account.user_id),
        device_id=DeviceID(account.device_id),
        base_url=server.base_url,
        token=account.access_token,
        state_store=state,
    )
    machine = OlmMachine(client, MemoryCryptoStore(account.user_id, "test"), state)
    machine.send_keys_min_trust = TrustState.CROSS_SIGNED_TOFU
    await machine.load()
    await machine.share_keys(current_otk_count=0)
    client.crypto = machine
    try:
        yield client
    finally:
        await client.api.session.close()


async def _encrypted_room(client: Client, room: str, members: list[str]) -> None:
    """What the client's sync would have told its state store."""
    state = client.state_store
    assert state is not None
    await state.set_encryption_info(
        RoomID(room), RoomEncryptionStateEventContent(algorithm=EncryptionAlgorithm.MEGOLM_V1)
    )
    for member in members:
        await state.set_membership(RoomID(room), UserID(member), Membership.JOIN)


async def test_mautrix_sending_only_to_cross_signed_devices_reaches_the_bot(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    async with (
        Human(synapse, alice) as human,
        _mautrix(synapse, alice) as client,
        running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True),
    ):
        room = await human.direct_chat(bot.user_id, encrypted=True)
        await human.until(lambda h: h.joined(room, bot.user_id))
        await _encrypted_room(client, room, [alice.user_id, bot.user_id])
        await client.send_text(RoomID(room), "only cross-signed")
        answer = await human.until(
            lambda h: h.events_of(room, bot.user_id, "m.room.encrypted") or None
        )
    assert answer  # the bot read the message (it answers only what it decrypted)


async def test_the_same_client_gives_a_device_nobody_cross_signed_nothing(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The rule bites: the bot account's device without cross-signing (as before issue
    41) is left out of the room key, so the test above can fail."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    async with (
        Human(synapse, alice) as human,
        _mautrix(synapse, alice) as client,
        EncryptingHuman(synapse, bot) as unsigned,
    ):
        await unsigned.upload_keys()
        room = await human.direct_chat(bot.user_id, encrypted=True)
        await unsigned.join(room)
        await _encrypted_room(client, room, [alice.user_id, bot.user_id])
        await client.send_text(RoomID(room), "for cross-signed eyes only")
        await unsigned.sync_once()
    assert not unsigned.group_in, "the unsigned device was given a room key"
