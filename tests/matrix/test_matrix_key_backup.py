"""Server-side key backup on the real Synapse: the room keys the bot keeps (a member's,
and its own) are backed up, and a new state folder restored with the recovery key reads
the history it had access to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.matrix.accounts import register, second_device, unique
from tests.matrix.bot import running_bot
from tests.matrix.e2ee_human import EncryptingHuman
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix import PASSWORD_ENV
from thalos_bot_matrix.cross_signing import RECOVERY_ENV, recovery_key_file
from thalos_bot_matrix.crypto_store import CryptoStore

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_restored_state_folder_reads_the_history_it_had_access_to(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    monkeypatch.setenv(PASSWORD_ENV, bot.password)
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    first_home, second_home = tmp_path / "first", tmp_path / "second"
    async with EncryptingHuman(synapse, alice) as human:
        await human.upload_keys()
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, first_home, encryption=True
        ):
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.joined(room, bot.user_id))
            asked = await human.say_encrypted(room, bot.user_id, "an old secret")
            await human.until(lambda h: "You said: an old secret" in h.bodies(room, bot.user_id))
        # The answer streams: its first message holds the first words, edits the rest.
        answers = [
            e["event_id"]
            for e in human.events[room]
            if e["sender"] == bot.user_id and e["type"] == "m.room.message"
        ]
        recovery_key = recovery_key_file(first_home, bot.user_id).read_text().strip()
        other = await second_device(synapse, bot)
        monkeypatch.setenv(RECOVERY_ENV, recovery_key)
        with capture_logs() as logs:
            async with running_bot(
                synapse, other, [alice.user_id], monkeypatch, second_home, encryption=True
            ):
                pass
        path = f"/_matrix/client/v3/rooms/{room}/event/"
        sealed_question = (await human.call("GET", path + asked))["content"]
        sealed_answers = [(await human.call("GET", path + a))["content"] for a in answers]
    restored = [e for e in logs if e["event"] == "matrix_key_backup_restored"]
    assert [e["keys"] for e in restored] == [2], "alice's room key and the bot's own"
    store = CryptoStore.load(second_home, bot.user_id, other.device_id)
    try:

        def shown(sealed: dict[str, Any]) -> str:
            session = store.inbound[f"{room}|{sealed['session_id']}"]
            content = json.loads(session.decrypt(sealed["ciphertext"])[0])["content"]
            return str(content.get("m.new_content", content)["body"])

        assert shown(sealed_question) == "an old secret"
        assert "You said: an old secret" in [shown(sealed) for sealed in sealed_answers]
    finally:
        store.close()
