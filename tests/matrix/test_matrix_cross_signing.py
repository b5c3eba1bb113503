"""Cross-signing on the real Synapse: the first start with encryption bootstraps the
account's keys (the homeserver asks for the password), a restart keeps them, and the
recovery key restores them into an empty state folder on a new device."""

from __future__ import annotations

import io
import json
import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
from olm.pk import PkSigning
from olm.utility import ed25519_verify
from structlog.testing import capture_logs

from tests.matrix.accounts import register, second_device, unique
from tests.matrix.bot import running_bot
from tests.matrix.e2ee_human import EncryptingHuman
from tests.matrix.human import JSON, Human
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix import PASSWORD_ENV, TOKEN_ENV
from thalos_bot_matrix.client import MatrixClient
from thalos_bot_matrix.cross_signing import (
    RECOVERY_ENV,
    CrossSigningError,
    recovery_key_file,
    upload_with_auth,
)
from thalos_bot_matrix.crypto import Crypto
from thalos_bot_matrix.crypto_store import CryptoStore
from thalos_bot_matrix.recovery import b64, decode_recovery_key, unb64
from thalos_bot_matrix.setup_command import setup_encryption

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _signable(value: JSON) -> str:
    rest = {k: v for k, v in value.items() if k not in ("signatures", "unsigned")}
    return json.dumps(rest, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _only_key(published: JSON) -> str:
    [key] = published["keys"].values()
    return str(key)


async def _identity(human: Human, user: str, device: str) -> tuple[str, str]:
    """The account's master key and the device's self-signing key, each signature on the
    way checked: master -> self-signing -> the device."""
    found = await human.call("POST", "/_matrix/client/v3/keys/query", {"device_keys": {user: []}})
    master = _only_key(found["master_keys"][user])
    self_signing = found["self_signing_keys"][user]
    ssk = _only_key(self_signing)
    ed25519_verify(
        master, _signable(self_signing), self_signing["signatures"][user][f"ed25519:{master}"]
    )
    keys = found["device_keys"][user][device]
    ed25519_verify(ssk, _signable(keys), keys["signatures"][user][f"ed25519:{ssk}"])
    return master, ssk


def _events(logs: list[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e["event"] == name]


async def test_bootstrap_then_a_restart_keeps_the_same_identity(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    monkeypatch.setenv(PASSWORD_ENV, bot.password)
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    async with Human(synapse, alice) as human:
        with capture_logs() as first:
            async with running_bot(
                synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
            ):
                pass
        identity = await _identity(human, bot.user_id, bot.device_id)
        key_file = recovery_key_file(tmp_path, bot.user_id)
        assert key_file.stat().st_mode & 0o777 == 0o600
        decode_recovery_key(key_file.read_text())  # a well-formed recovery key
        with capture_logs() as second:
            async with running_bot(
                synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
            ):
                pass
        assert await _identity(human, bot.user_id, bot.device_id) == identity
    assert [e["outcome"] for e in _events(first, "matrix_cross_signing_on")] == ["bootstrapped"]
    assert [e["outcome"] for e in _events(second, "matrix_cross_signing_on")] == ["kept"]
    assert not _events(second, "matrix_cross_signing_bootstrapped")
    assert not _events(second, "matrix_device_cross_signed"), "already signed"
    for event in first + second:
        assert bot.password not in json.dumps(event, default=str)


async def test_the_recovery_key_restores_the_identity_into_an_empty_state_folder(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    monkeypatch.setenv(PASSWORD_ENV, bot.password)
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    first_home, second_home = tmp_path / "first", tmp_path / "second"
    async with Human(synapse, alice) as human:
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, first_home, encryption=True
        ):
            pass
        master, ssk = await _identity(human, bot.user_id, bot.device_id)
        recovery_key = recovery_key_file(first_home, bot.user_id).read_text().strip()
        # Without the key, a new state folder says so and bootstraps nothing.
        other = await second_device(synapse, bot)
        with capture_logs() as without:
            async with running_bot(
                synapse, other, [alice.user_id], monkeypatch, second_home, encryption=True
            ):
                pass
        monkeypatch.setenv(RECOVERY_ENV, recovery_key)
        with capture_logs() as logs:
            async with running_bot(
                synapse, other, [alice.user_id], monkeypatch, second_home, encryption=True
            ):
                pass
        assert await _identity(human, bot.user_id, other.device_id) == (master, ssk)
        assert await _identity(human, bot.user_id, bot.device_id) == (master, ssk)
    assert [e["reason"] for e in _events(without, "matrix_cross_signing_unavailable")] == [
        (
            "the account has cross-signing keys this state folder does not hold: "
            f"set {RECOVERY_ENV} to restore them"
        )
    ]
    assert [e["outcome"] for e in _events(logs, "matrix_cross_signing_on")] == ["restored"]
    assert not _events(logs, "matrix_cross_signing_bootstrapped")
    assert not recovery_key_file(second_home, bot.user_id).exists()
    for event in logs:
        assert recovery_key not in json.dumps(event, default=str)


async def test_replacing_published_keys_takes_the_password_as_interactive_auth(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Synapse lets an account publish its first cross-signing keys without asking; it
    asks for user-interactive auth to replace them, which is what other homeservers ask
    for the first ones too: the password answers it, and without it the reason is said."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    async with running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True):
        pass
    store = CryptoStore.load(tmp_path, bot.user_id, bot.device_id)
    client = MatrixClient(synapse.base_url, bot.access_token, timeout=30.0)
    try:
        crypto = Crypto(client, store)
        seed = b64(os.urandom(32))
        public = str(PkSigning(unb64(seed)).public_key)
        body: JSON = {
            "master_key": crypto.sign_with_device(
                {"user_id": bot.user_id, "usage": ["master"], "keys": {f"ed25519:{public}": public}}
            )
        }
        path = "/_matrix/client/v3/keys/device_signing/upload"
        with pytest.raises(CrossSigningError, match="THALOS_MATRIX_PASSWORD"):
            await upload_with_auth(crypto, path, body, None)
        await upload_with_auth(crypto, path, body, bot.password)
    finally:
        await client.aclose()
    store.close()
    async with Human(synapse, alice) as human:
        found = await human.call(
            "POST", "/_matrix/client/v3/keys/query", {"device_keys": {bot.user_id: []}}
        )
    assert _only_key(found["master_keys"][bot.user_id]) == public


async def test_setup_encryption_bootstraps_and_prints_the_recovery_key_once(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    monkeypatch.setenv(TOKEN_ENV, bot.access_token)
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    monkeypatch.setenv("THALOS_BOT_STATE_DIR", str(tmp_path / "state"))
    config = tmp_path / "bot.toml"
    config.write_text(
        f'[channels.matrix]\nhomeserver = "{synapse.base_url}"\nuser_id = "{bot.user_id}"\n'
        "encryption = true\n",
        encoding="utf-8",
    )
    first, second = io.StringIO(), io.StringIO()
    assert await setup_encryption(config, first) == 0
    assert await setup_encryption(config, second) == 0
    printed = [line.strip() for line in first.getvalue().splitlines()]
    keys = [line for line in printed if len(line.split()) == 12]
    assert len(keys) == 1, printed
    decode_recovery_key(keys[0])
    assert "Cross-signing: bootstrapped" in first.getvalue()
    assert "Cross-signing: kept" in second.getvalue()
    assert keys[0] not in second.getvalue(), "shown once"
    assert not recovery_key_file(tmp_path / "state", bot.user_id).exists()
    async with Human(synapse, alice) as human:
        master, _ = await _identity(human, bot.user_id, bot.device_id)
    # The key printed is the one that opens the account's secret storage.
    other = await second_device(synapse, bot)
    monkeypatch.setenv(TOKEN_ENV, other.access_token)
    monkeypatch.setenv(RECOVERY_ENV, keys[0])
    monkeypatch.setenv("THALOS_BOT_STATE_DIR", str(tmp_path / "elsewhere"))
    third = io.StringIO()
    assert await setup_encryption(config, third) == 0, third.getvalue()
    assert "Cross-signing: restored" in third.getvalue()
    async with Human(synapse, alice) as human:
        assert (await _identity(human, bot.user_id, other.device_id))[0] == master


async def test_a_client_that_sends_only_to_cross_signed_devices_reaches_the_bot(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Element's coming default (MSC4153): no room key for a device its owner did not
    cross-sign. The bot's device is, so such a client is still read and answered."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    monkeypatch.delenv(RECOVERY_ENV, raising=False)
    async with EncryptingHuman(synapse, alice, only_cross_signed=True) as human:
        await human.upload_keys()
        async with running_bot(
            synapse, bot, [alice.user_id], monkeypatch, tmp_path, encryption=True
        ):
            room = await human.direct_chat(bot.user_id, encrypted=True)
            await human.until(lambda h: h.joined(room, bot.user_id))
            await human.say_encrypted(room, bot.user_id, "only if you are cross-signed")
            await human.until(
                lambda h: "You said: only if you are cross-signed" in h.bodies(room, bot.user_id)
            )


async def test_without_cross_signing_such_a_client_sends_the_bot_nothing(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The same client against a device nobody cross-signed (the bot before this
    change): it refuses to share its room key (so the test above can fail)."""
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    async with EncryptingHuman(synapse, alice, only_cross_signed=True) as human:
        await human.upload_keys()
        twin = EncryptingHuman(synapse, bot)
        async with twin:
            await twin.upload_keys()  # the bot account's device, keys but no cross-signing
        with pytest.raises(AssertionError, match="no cross-signing keys"):
            await human.bot_device(bot.user_id)
