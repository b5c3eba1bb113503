"""Encrypted direct chats (Element's default). With ``encryption = true`` the bot reads
and answers them encrypted (Olm/Megolm), against a client that encrypts as Element
does; with encryption off (or when it cannot be set up) it says so once in the room and
never answers there in plaintext."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import anyio
import pytest
from structlog.testing import capture_logs

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.crypto_files import kept_keys
from tests.matrix.e2ee_human import EncryptingHuman
from tests.matrix.human import JSON, Human
from tests.matrix.synapse import SynapseServer
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider
from thalos_bot_matrix.sealing import ENCRYPTED

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _ciphertext() -> dict[str, str]:
    """What an encrypting client sends (the bot cannot read it either way)."""
    return {
        "algorithm": "m.megolm.v1.aes-sha2",
        "ciphertext": secrets.token_urlsafe(48),
        "device_id": "ELEMENT",
        "sender_key": secrets.token_urlsafe(32),
        "session_id": secrets.token_urlsafe(32),
    }


async def test_an_encrypted_direct_chat_is_told_once_and_never_answered(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    async with Human(synapse, alice) as human:
        async with running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path) as running:
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.bodies(room, bot.user_id))
            await human.send(room, _ciphertext(), "m.room.encrypted")
            # A client that (wrongly) sends plaintext into the encrypted room.
            await human.say(room, "hello?")
            plain = await human.direct_chat(bot.user_id)
            await human.until(lambda h: h.joined(plain, bot.user_id))
            await human.say(plain, "and here?")
            # Messages are handled in sync order: once this is answered, the encrypted
            # room's two messages were handled (and refused) before it.
            await human.until(lambda h: "You said: and here?" in h.bodies(plain, bot.user_id))
            requests = len(running.provider.requests)
        # A restart: the room is still known to be encrypted and is not told again.
        async with running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path):
            await human.send(room, _ciphertext(), "m.room.encrypted")
            await human.say(plain, "still here?")
            await human.until(lambda h: "You said: still here?" in h.bodies(plain, bot.user_id))
        said = human.bodies(room, bot.user_id)
    assert said == [ENCRYPTED]
    assert human.shown(room, bot.user_id)[0].content["msgtype"] == "m.notice"
    assert requests == 1
    assert (tmp_path / "matrix").stat().st_mode & 0o777 == 0o700
    for path in (tmp_path / "matrix").iterdir():
        assert path.stat().st_mode & 0o777 == 0o600


def _bot_events(human: EncryptingHuman, room: str, bot: str) -> list[JSON]:
    return [
        e
        for e in human.events.get(room, [])
        if e["sender"] == bot and "state_key" not in e and e["type"] != "m.room.member"
    ]


async def test_an_encrypted_direct_chat_is_answered_encrypted_and_keys_survive_a_restart(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    gate = anyio.Event()
    provider = ScriptedProvider([[Say("The first half"), Await(gate.wait), Say(", then more")]])
    async with EncryptingHuman(synapse, alice) as human:
        await human.upload_keys()
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, tmp_path, provider, encryption=True
        ):
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.joined(room, bot.user_id))
            # Neither a leak in plaintext nor an event without its key is answered.
            await human.say(room, "in plaintext")
            await human.send(room, _ciphertext(), "m.room.encrypted")
            await human.say_encrypted(room, bot.user_id, "hello in secret")
            await human.until(lambda h: h.bodies(room, bot.user_id) == ["The first half"])
            gate.set()
            await human.until(
                lambda h: h.bodies(room, bot.user_id) == ["The first half, then more"]
            )
            device = await human.bot_device(bot.user_id)
        # A restart: the same device and keys. Alice's room key from before still
        # decrypts, the Olm session still carries a new one, the bot's own session goes on.
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
        ) as running:
            await human.say_encrypted(room, bot.user_id, "still secret?")
            await human.until(lambda h: "You said: still secret?" in h.bodies(room, bot.user_id))
            human.rotate(room)
            await human.say_encrypted(room, bot.user_id, "a new session")
            await human.until(lambda h: "You said: a new session" in h.bodies(room, bot.user_id))
            assert await human.bot_device(bot.user_id) == device
            requests = len(running.provider.requests)
        shown = human.shown(room, bot.user_id)
        sent = _bot_events(human, room, bot.user_id)
    assert [m.body for m in shown] == [
        "The first half, then more",
        "You said: still secret?",
        "You said: a new session",
    ]
    assert shown[0].edits >= 1, "the m.replace edits went out too"
    assert sent, "the bot said something"
    assert all(e.get("encrypted") is True for e in sent), "nothing in plaintext, edits included"
    assert ENCRYPTED not in human.bodies(room, bot.user_id)
    assert requests == 2, "no replay of the first start's message"
    store = tmp_path / "matrix" / f"crypto-{bot.user_id.lstrip('@').replace(':', '_')}.sqlite3"
    assert store.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "matrix").stat().st_mode & 0o777 == 0o700


async def test_when_encryption_cannot_be_set_up_the_room_is_told_once_and_not_answered(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    # A store this device's keys cannot be read back from.
    store = tmp_path / "matrix" / f"crypto-{bot.user_id.lstrip('@').replace(':', '_')}.json"
    store.parent.mkdir(mode=0o700)
    store.write_text(
        json.dumps({"user_id": bot.user_id, "device_id": bot.device_id, "account": "garbage"})
    )
    async with EncryptingHuman(synapse, alice) as human:
        await human.upload_keys()
        with capture_logs() as logs:
            async with running_bot(
                synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
            ) as running:
                room = await human.direct_chat(bot.user_id, encrypted=True)
                await human.until(lambda h: h.bodies(room, bot.user_id))
                await human.send(room, _ciphertext(), "m.room.encrypted")
                plain = await human.direct_chat(bot.user_id)
                await human.until(lambda h: h.joined(plain, bot.user_id))
                await human.say(plain, "and here?")
                await human.until(lambda h: "You said: and here?" in h.bodies(plain, bot.user_id))
                requests = len(running.provider.requests)
        said = human.bodies(room, bot.user_id)
    assert said == [ENCRYPTED]
    assert requests == 1
    unavailable = [e for e in logs if e["event"] == "matrix_encryption_unavailable"]
    assert [e["reason"] for e in unavailable] == ["OlmAccountError"]
    assert not [e for e in logs if e["event"] == "matrix_encryption_on"]


def _membership(human: Human, room: str, user: str) -> str | None:
    """The user's membership as the room's latest member event says."""
    found = None
    for event in human.events.get(room, []):
        if event["type"] == "m.room.member" and event.get("state_key") == user:
            found = event["content"].get("membership")
    return found


async def test_a_member_leaving_starts_a_new_room_key(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What the bot says after a member left is under a key that member never got."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    bob = await register(synapse, unique("bob"))
    async with (
        EncryptingHuman(synapse, alice) as human,
        EncryptingHuman(synapse, bob) as other,
    ):
        await human.upload_keys()
        await other.upload_keys()
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
        ):
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.joined(room, bot.user_id))
            await human.call(
                "POST", f"/_matrix/client/v3/rooms/{room}/invite", {"user_id": bob.user_id}
            )
            await other.join(room)
            await human.until(lambda h: h.joined(room, bob.user_id))
            await human.say_encrypted(room, bot.user_id, "one")
            await human.until(lambda h: "You said: one" in h.bodies(room, bot.user_id))
            await other.until(lambda h: "You said: one" in h.bodies(room, bot.user_id))
            await human.say_encrypted(room, bot.user_id, "two")
            await human.until(lambda h: "You said: two" in h.bodies(room, bot.user_id))
            await other.call("POST", f"/_matrix/client/v3/rooms/{room}/leave", {})
            await human.until(lambda h: _membership(h, room, bob.user_id) == "leave")
            await human.say_encrypted(room, bot.user_id, "three")
            await human.until(lambda h: "You said: three" in h.bodies(room, bot.user_id))
        sessions = {
            e["content"].get("m.new_content", e["content"])["body"]: e["session_id"]
            for e in _bot_events(human, room, bot.user_id)
            if e["type"] == "m.room.message"
        }
    assert sessions["You said: one"] == sessions["You said: two"], "no member left between"
    assert sessions["You said: three"] != sessions["You said: two"], "bob left: a new key"
    assert other.group_in, "bob did get the room key while he was there"
    assert not any(sessions["You said: three"] in key for key in other.group_in)


async def test_room_keys_are_kept_only_from_members_for_the_bots_rooms(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Anyone can send the bot's device a room key for any room id. Only a key from a
    device of someone in that room, for a room the bot is in, is kept: a stranger's,
    or one for a room the bot does not serve, would only fill the store."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    mallory = await register(synapse, unique("mallory"))
    async with (
        EncryptingHuman(synapse, alice) as human,
        EncryptingHuman(synapse, mallory) as stranger,
    ):
        await human.upload_keys()
        await stranger.upload_keys()
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
        ):
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.joined(room, bot.user_id))
            nowhere = f"!nowhere:{synapse.server_name}"
            refused = [
                await stranger.share_key(room, bot.user_id),  # not in the room
                await stranger.share_key(nowhere, bot.user_id),
                await human.share_key(nowhere, bot.user_id),  # a room the bot is not in
            ]
            # Sent after those, to the same device: once it is read, they were handled.
            await human.say_encrypted(room, bot.user_id, "hello")
            await human.until(lambda h: "You said: hello" in h.bodies(room, bot.user_id))
    kept = kept_keys(tmp_path, bot.user_id)
    assert any(r == room for r, _ in kept), "alice's own key is kept"
    for session_id in refused:
        assert session_id not in {s for _, s in kept}, (session_id, kept)
