"""`thalos-bot matrix pair` on the real Synapse: a code typed in a direct chat adds the
sender to bot.toml; a stranger's wrong code is never answered and their room is left."""

from __future__ import annotations

import tomllib
from pathlib import Path

import anyio
import pytest

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.e2ee_human import EncryptingHuman
from tests.matrix.human import Human
from tests.matrix.synapse import SynapseServer
from thalos_bot.channels.admission.pair_command import PAIRED
from thalos_bot_matrix import TOKEN_ENV
from thalos_bot_matrix.pair_command import pair
from thalos_bot_matrix.state import SyncState

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_code_typed_in_a_direct_chat_pairs_its_sender_and_no_stranger_is_answered(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    mallory = await register(synapse, unique("mallory"))
    monkeypatch.setenv(TOKEN_ENV, bot.access_token)
    monkeypatch.setenv("THALOS_BOT_STATE_DIR", str(tmp_path / "state"))
    config = tmp_path / "bot.toml"
    config.write_text(
        f'# my bot\n[channels.matrix]\nhomeserver = "{synapse.base_url}"\n'
        f'user_id = "{bot.user_id}"\nsync_timeout = 2\n',
        encoding="utf-8",
    )
    lines: list[str] = []
    shown = anyio.Event()

    def show(line: str) -> None:
        lines.append(line)
        shown.set()

    result: list[int] = []
    async with (
        Human(synapse, alice) as owner,
        Human(synapse, mallory) as stranger,
        anyio.create_task_group() as group,
    ):

        async def run() -> None:
            result.append(await pair(config, yes=True, ask=None, show=show))

        group.start_soon(run)
        await shown.wait()
        code = next(line.strip() for line in lines if "-" in line and line.strip().isupper())
        theirs = await stranger.direct_chat(bot.user_id)
        await stranger.until(lambda h: h.joined(theirs, bot.user_id))
        await stranger.say(theirs, "ABCD-EFGH")
        ours = await owner.direct_chat(bot.user_id)
        await owner.until(lambda h: h.joined(ours, bot.user_id))
        await owner.say(ours, code)
        await owner.until(lambda h: PAIRED in h.bodies(ours, bot.user_id))
        # Pairing left the stranger's room before it confirmed: nothing was said there.
        members = await stranger.call("GET", f"/_matrix/client/v3/rooms/{theirs}/members")
        await stranger.sync_once()
        said = stranger.bodies(theirs, bot.user_id)
    assert result == [0]
    section = tomllib.loads(config.read_text(encoding="utf-8"))["channels"]["matrix"]
    assert section["allowed_users"] == [alice.user_id]
    assert section["enabled"] is True
    assert config.read_text(encoding="utf-8").startswith("# my bot")
    states = {e["state_key"]: e["content"]["membership"] for e in members["chunk"]}
    assert states[bot.user_id] == "leave"
    assert said == []
    # The position pairing reached is where the daemon goes on from: what pairing read
    # (the code, the stranger's message) is never answered.
    kept = await SyncState.opened(tmp_path / "state", bot.user_id)
    assert kept.next_batch is not None


async def test_with_encryption_on_the_code_may_come_in_an_encrypted_chat(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Element encrypts a new direct chat: the code is decrypted as the daemon would,
    the answer goes encrypted, and the daemon then goes on with the same device."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    monkeypatch.setenv(TOKEN_ENV, bot.access_token)
    monkeypatch.setenv("THALOS_BOT_STATE_DIR", str(tmp_path / "state"))
    config = tmp_path / "bot.toml"
    config.write_text(
        f'[channels.matrix]\nhomeserver = "{synapse.base_url}"\n'
        f'user_id = "{bot.user_id}"\nencryption = true\nsync_timeout = 2\n',
        encoding="utf-8",
    )
    lines: list[str] = []
    shown = anyio.Event()

    def show(line: str) -> None:
        lines.append(line)
        shown.set()

    result: list[int] = []
    async with EncryptingHuman(synapse, alice) as owner:
        await owner.upload_keys()
        async with anyio.create_task_group() as group:

            async def run() -> None:
                result.append(await pair(config, yes=True, ask=None, show=show))

            group.start_soon(run)
            await shown.wait()
            code = next(line.strip() for line in lines if "-" in line and line.strip().isupper())
            ours = await owner.direct_chat(bot.user_id, encrypted=True)
            await owner.until(lambda h: h.joined(ours, bot.user_id))
            await owner.say_encrypted(ours, bot.user_id, code)
            await owner.until(lambda h: PAIRED in h.bodies(ours, bot.user_id))
        # The daemon goes on from where pairing stopped, past the room's encryption
        # event: it knows the chat is encrypted from what pairing kept, and answers
        # there encrypted.
        state = tmp_path / "state"
        allowed = [alice.user_id]
        async with running_bot(synapse, bot, allowed, monkeypatch, state, encryption=True):
            await owner.say_encrypted(ours, bot.user_id, "hello after pairing")
            said = "You said: hello after pairing"
            await owner.until(lambda h: said in h.bodies(ours, bot.user_id))
    assert result == [0]
    paired, *answer = owner.events_of(ours, bot.user_id, "m.room.message")
    assert paired.get("encrypted") is True  # sent Megolm-encrypted, read back decrypted
    assert answer, "the daemon answered"
    assert all(e.get("encrypted") is True for e in answer), "never in plaintext"
    section = tomllib.loads(config.read_text(encoding="utf-8"))["channels"]["matrix"]
    assert section["allowed_users"] == [alice.user_id]
    assert any("(with encryption off)" not in line for line in lines if bot.user_id in line)
    kept = await SyncState.opened(tmp_path / "state", bot.user_id)
    assert ours in kept.encrypted
