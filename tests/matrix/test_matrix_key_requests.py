"""``m.room_key_request`` on the real Synapse: the bot forwards a room key only to its
own account's devices that its self-signing key signed; a stranger's request, and one
from its own device nobody signed, get nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from olm.pk import PkSigning
from structlog.testing import capture_logs

from tests.matrix.accounts import register, second_device, unique
from tests.matrix.bot import running_bot
from tests.matrix.crypto_files import store_file
from tests.matrix.e2ee_human import EncryptingHuman, _signable
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix import PASSWORD_ENV
from thalos_bot_matrix.cross_signing import RECOVERY_ENV
from thalos_bot_matrix.recovery import unb64

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _self_signing_seed(state_dir: Path, user_id: str) -> str:
    db = sqlite3.connect(store_file(state_dir, user_id, ".sqlite3"))
    try:
        [(seed,)] = db.execute(
            "SELECT value FROM meta WHERE name = 'secret:m.cross_signing.self_signing'"
        ).fetchall()
    finally:
        db.close()
    return str(seed)


async def _cross_sign(device: EncryptingHuman, seed: str) -> None:
    """The account's self-signing key signs ``device`` (as a verification would)."""
    user, device_id = device.user_id, device.account.device_id
    found = await device.call("POST", "/_matrix/client/v3/keys/query", {"device_keys": {user: []}})
    keys = {k: v for k, v in found["device_keys"][user][device_id].items() if k != "unsigned"}
    signing = PkSigning(unb64(seed))
    keys["signatures"] = {user: {f"ed25519:{signing.public_key}": signing.sign(_signable(keys))}}
    answer = await device.call(
        "POST", "/_matrix/client/v3/keys/signatures/upload", {user: {device_id: keys}}
    )
    assert not answer.get("failures"), answer


async def test_a_room_key_is_forwarded_only_to_the_bots_own_cross_signed_device(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    mallory = await register(synapse, unique("mallory"))
    monkeypatch.setenv(PASSWORD_ENV, bot.password)
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    twin_account = await second_device(synapse, bot)
    unsigned_account = await second_device(synapse, bot)
    async with (
        EncryptingHuman(synapse, alice) as human,
        EncryptingHuman(synapse, mallory) as stranger,
        EncryptingHuman(synapse, twin_account) as twin,
        EncryptingHuman(synapse, unsigned_account) as unsigned,
    ):
        await human.upload_keys()
        await stranger.upload_keys()
        with capture_logs() as logs:
            async with running_bot(
                synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
            ):
                room = await human.direct_chat(bot.user_id, encrypted=True)
                await human.until(lambda h: h.joined(room, bot.user_id))
                await human.say_encrypted(room, bot.user_id, "a secret")
                await human.until(lambda h: "You said: a secret" in h.bodies(room, bot.user_id))
                session_id = str(human.group_out[room].id)
                sender_key = human.olm.identity_keys["curve25519"]
                await twin.upload_keys()
                await unsigned.upload_keys()
                await _cross_sign(twin, _self_signing_seed(tmp_path, bot.user_id))
                for asker in (stranger, unsigned, twin):  # the twin last
                    await asker.request_key(
                        room, session_id, sender_key, bot.user_id, bot.device_id
                    )
                key = f"{room}|{session_id}"
                await twin.until(lambda _h: key in twin.forwarded or None)
                # Sent before the twin's and handled in order: the others got nothing.
                await stranger.sync_once()
                await unsigned.sync_once()
    forwarded = twin.forwarded[key]
    assert forwarded["sender_key"] == sender_key
    assert forwarded["sender_claimed_ed25519_key"] == human.olm.identity_keys["ed25519"]
    assert key not in stranger.forwarded
    assert key not in unsigned.forwarded
    refusals = [e for e in logs if e["event"] == "matrix_key_request_refused"]
    assert sorted(e["reason"] for e in refusals) == ["another user", "not cross-signed"]
    assert {e["log_level"] for e in refusals} == {"debug"}
