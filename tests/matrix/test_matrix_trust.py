"""``trust = "cross-signed"`` on the real Synapse: the bot's room key goes only to devices
their owner cross-signed; a member whose device nobody cross-signed cannot read the
bot's answer (and the log says why), one whose device is cross-signed can."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from olm.pk import PkSigning
from structlog.testing import capture_logs

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.e2ee_human import EncryptingHuman, _signable
from tests.matrix.human import JSON
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix.cross_signing import RECOVERY_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _signed(signing: PkSigning, user: str, value: JSON) -> JSON:
    signature = signing.sign(_signable(value))
    return {**value, "signatures": {user: {f"ed25519:{signing.public_key}": signature}}}


async def cross_sign_self(human: EncryptingHuman) -> None:
    """``human``'s account gets a master and a self-signing key, and signs its device."""
    user, device_id = human.user_id, human.account.device_id
    master, ssk = PkSigning(os.urandom(32)), PkSigning(os.urandom(32))
    master_key = {
        "user_id": user,
        "usage": ["master"],
        "keys": {f"ed25519:{master.public_key}": master.public_key},
    }
    ssk_key = _signed(
        master,
        user,
        {
            "user_id": user,
            "usage": ["self_signing"],
            "keys": {f"ed25519:{ssk.public_key}": ssk.public_key},
        },
    )
    await human.call(
        "POST",
        "/_matrix/client/v3/keys/device_signing/upload",
        {"master_key": master_key, "self_signing_key": ssk_key},
    )
    found = await human.call("POST", "/_matrix/client/v3/keys/query", {"device_keys": {user: []}})
    keys = {k: v for k, v in found["device_keys"][user][device_id].items() if k != "unsigned"}
    keys.pop("signatures")
    answer = await human.call(
        "POST",
        "/_matrix/client/v3/keys/signatures/upload",
        {user: {device_id: _signed(ssk, user, keys)}},
    )
    assert not answer.get("failures"), answer


async def test_only_cross_signed_devices_get_the_bots_room_key(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    carol = await register(synapse, unique("carol"))
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    async with (
        EncryptingHuman(synapse, alice) as signed,
        EncryptingHuman(synapse, carol) as unsigned,
    ):
        await signed.upload_keys()
        await unsigned.upload_keys()
        await cross_sign_self(signed)
        with capture_logs() as logs:
            async with running_bot(
                synapse,
                bot,
                [alice.user_id, carol.user_id],
                monkeypatch,
                tmp_path,
                encryption=True,
                trust="cross-signed",
            ):
                room_a = await signed.direct_chat(bot.user_id, encrypted=True)
                await signed.until(lambda h: h.joined(room_a, bot.user_id))
                room_c = await unsigned.direct_chat(bot.user_id, encrypted=True)
                await unsigned.until(lambda h: h.joined(room_c, bot.user_id))
                await unsigned.say_encrypted(room_c, bot.user_id, "from carol")
                # The bot answers carol, under a key her device never gets.
                await unsigned.until(
                    lambda h: any(
                        e["sender"] == bot.user_id and e["type"] == "m.room.encrypted"
                        for e in h.events.get(room_c, [])
                    )
                )
                await signed.say_encrypted(room_a, bot.user_id, "from alice")
                await signed.until(
                    lambda h: "You said: from alice" in h.bodies(room_a, bot.user_id)
                )
                await unsigned.sync_once()
    assert "You said: from carol" not in unsigned.bodies(room_c, bot.user_id)
    refused = [e for e in logs if e["event"] == "matrix_device_not_cross_signed"]
    assert [(e["user"], e["device"]) for e in refused] == [(carol.user_id, carol.device_id)]
