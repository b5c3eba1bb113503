"""A wedged Olm session on the real Synapse: the bot lost its session with a person's
device (its state folder restored from before that session), so what the device sends
over it cannot be opened. The bot opens a new session with that device and sends an
``m.dummy`` over it; the device then uses the new session, the room key it sent in vain
is asked for and sent again, and the message waiting on it is answered. A second
message nothing opens, within the hour, forces no second session."""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.crypto_files import store_file
from tests.matrix.e2ee_human import OLM, EncryptingHuman
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix.cross_signing import RECOVERY_ENV

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _forget_sessions(state_dir: Path, user_id: str, curve25519: str) -> None:
    db = sqlite3.connect(store_file(state_dir, user_id, ".sqlite3"))
    try:
        gone = db.execute("DELETE FROM olm_sessions WHERE curve25519 = ?", (curve25519,))
        assert gone.rowcount == 1
        db.commit()
    finally:
        db.close()


async def _unopenable(human: EncryptingHuman, bot: str) -> None:
    """An Olm message from the person's device that no session opens."""
    device_id, curve, _ed = await human.bot_device(bot)
    body = {"type": 1, "body": secrets.token_urlsafe(96).replace("-", "+").replace("_", "/")}
    content = {
        "algorithm": OLM,
        "sender_key": human.olm.identity_keys["curve25519"],
        "ciphertext": {curve: body},
    }
    await human.call(
        "PUT",
        f"/_matrix/client/v3/sendToDevice/m.room.encrypted/{secrets.token_hex(8)}",
        {"messages": {bot: {device_id: content}}},
    )


async def test_a_wedged_session_is_replaced_and_m_dummy_sent_once_an_hour(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    async with EncryptingHuman(synapse, alice) as human:
        await human.upload_keys()
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
        ):
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.joined(room, bot.user_id))
            await human.say_encrypted(room, bot.user_id, "hello")
            await human.until(lambda h: "You said: hello" in h.bodies(room, bot.user_id))
        # The bot answered over the session, so the device now sends plain Olm
        # messages on it (no pre-key message the bot could open a session from).
        assert human.to_device_types == ["m.room_key"]
        _forget_sessions(tmp_path, bot.user_id, human.olm.identity_keys["curve25519"])
        with capture_logs() as logs:
            async with running_bot(
                synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
            ):
                human.rotate(room)
                await human.say_encrypted(room, bot.user_id, "after the wedge")
                await human.until(lambda _h: "m.dummy" in human.to_device_types or None)
                await human.until(lambda _h: human.key_requests or None)
                await human.send_room_key(room, bot.user_id)  # over the new session
                await human.until(
                    lambda h: "You said: after the wedge" in h.bodies(room, bot.user_id)
                )
                await _unopenable(human, bot.user_id)
                await human.say_encrypted(room, bot.user_id, "later")
                await human.until(lambda h: "You said: later" in h.bodies(room, bot.user_id))
    assert human.to_device_types.count("m.dummy") == 1
    mended = [e for e in logs if e["event"] == "matrix_olm_session_unwedged"]
    assert [(e["user"], e["device"]) for e in mended] == [(alice.user_id, alice.device_id)]
    skipped = [e for e in logs if e["event"] == "matrix_olm_unwedge_skipped"]
    assert [e["reason"] for e in skipped] == ["mended within the hour"]
    assert human.bodies(room, bot.user_id).count("You said: after the wedge") == 1
