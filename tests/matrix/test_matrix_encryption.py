"""An encrypted direct chat (Element's default): this build has no end-to-end
encryption, so the bot says so once in the room and never answers there in plaintext."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix.sync import ENCRYPTED

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
