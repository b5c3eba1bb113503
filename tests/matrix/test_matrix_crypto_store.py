"""The encryption store: what may enter it, and a deployment's old whole-file store moved
into the SQLite one, on the real Synapse."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.crypto_files import kept_keys, store_file, write_legacy
from tests.matrix.e2ee_human import EncryptingHuman
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix.crypto_store import CryptoStore

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

STRANGER_KEYS = 400


async def test_a_strangers_flood_of_room_keys_is_not_kept(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """400 room keys for the bot's own room from someone not in it: none is kept, and
    none is logged above debug; a member's key for the same room is."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    mallory = await register(synapse, unique("mallory"))
    async with (
        EncryptingHuman(synapse, alice) as human,
        EncryptingHuman(synapse, mallory) as stranger,
    ):
        await human.upload_keys()
        await stranger.upload_keys()
        with capture_logs() as logs:
            async with running_bot(
                synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
            ):
                room = await human.direct_chat(bot.user_id, encrypted=True)
                await human.until(lambda h: h.joined(room, bot.user_id))
                refused: set[str] = set()
                for _ in range(STRANGER_KEYS):
                    stranger.rotate(room)
                    refused.add(await stranger.share_key(room, bot.user_id))
                # Sent after those, to the same device: once it is read, they were handled.
                await human.say_encrypted(room, bot.user_id, "hello")
                await human.until(lambda h: "You said: hello" in h.bodies(room, bot.user_id))
    kept = kept_keys(tmp_path, bot.user_id)
    assert len(refused) == STRANGER_KEYS
    assert not refused & {session for _, session in kept}
    assert human.group_out[room].id in {session for r, session in kept if r == room}
    refusals = [e for e in logs if e["event"] == "matrix_room_key_refused"]
    assert len(refusals) == STRANGER_KEYS
    assert {e["log_level"] for e in refusals} == {"debug"}
    assert {e["reason"] for e in refusals} == {"its sender is not in the room"}


async def test_the_old_whole_file_store_is_moved_over_with_its_device_and_keys(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A deployment's ``crypto-<user>.json`` (the earlier builds' store) is read on first
    start: the same device, the Olm session still carries a new room key, and the room
    key from before still decrypts, without alice sending either again."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    legacy = store_file(tmp_path, bot.user_id, ".json")
    database = store_file(tmp_path, bot.user_id, ".sqlite3")
    async with EncryptingHuman(synapse, alice) as human:
        await human.upload_keys()
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
        ):
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.joined(room, bot.user_id))
            await human.say_encrypted(room, bot.user_id, "before")
            await human.until(lambda h: "You said: before" in h.bodies(room, bot.user_id))
            device = await human.bot_device(bot.user_id)
        # The state folder as the earlier build left it: only the JSON file.
        store = CryptoStore.load(tmp_path, bot.user_id, bot.device_id)
        old_session = human.group_out[room].id
        assert f"{room}|{old_session}" in store.inbound
        write_legacy(store, legacy)
        store.close()
        for path in database.parent.glob(f"{database.name}*"):
            path.unlink()
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
        ):
            await human.say_encrypted(room, bot.user_id, "after the move")
            await human.until(lambda h: "You said: after the move" in h.bodies(room, bot.user_id))
            human.rotate(room)
            await human.say_encrypted(room, bot.user_id, "a new key")
            await human.until(lambda h: "You said: a new key" in h.bodies(room, bot.user_id))
            assert await human.bot_device(bot.user_id) == device
    assert not legacy.exists(), "moved, not kept twice"
    kept = kept_keys(tmp_path, bot.user_id)
    assert (room, old_session) in kept
    assert (room, human.group_out[room].id) in kept
    assert database.stat().st_mode & 0o777 == 0o600
