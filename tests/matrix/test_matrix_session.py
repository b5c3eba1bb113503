"""Signing in with the password (THALOS_MATRIX_PASSWORD) on the real Synapse: one
device, kept across restarts (its token in the state folder, 0600), and the same device
again after its token was revoked, so transaction ids stay meaningful."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from tests.matrix.accounts import register, unique
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix import PASSWORD_ENV, TOKEN_ENV
from thalos_bot_matrix.client import MatrixClient
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.session import Identity, sign_in
from thalos_bot_matrix.state import device_path

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _sign_in(config: MatrixConfig, state: Path) -> tuple[Identity, str]:
    client = MatrixClient(config.homeserver, None, timeout=10)
    try:
        identity = await sign_in(client, config, state)
        assert client.token is not None
        return identity, client.token
    finally:
        await client.aclose()


async def test_a_password_login_keeps_one_device_across_restarts_and_revocations(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.setenv(PASSWORD_ENV, bot.password)
    config = MatrixConfig.model_validate(
        {"homeserver": synapse.base_url, "user_id": bot.user_id, "device_name": "my bot"}
    )
    first, token = await _sign_in(config, tmp_path)
    saved = device_path(tmp_path, bot.user_id)
    assert saved.stat().st_mode & 0o777 == 0o600
    assert bot.password not in saved.read_text()
    again, same_token = await _sign_in(config, tmp_path)
    assert again.device_id == first.device_id
    assert same_token == token, "the kept token is used, no new login"
    async with httpx2.AsyncClient(base_url=synapse.base_url) as http:
        out = await http.post(
            "/_matrix/client/v3/logout", headers={"Authorization": f"Bearer {token}"}
        )
    assert out.status_code == 200
    renewed, new_token = await _sign_in(config, tmp_path)
    assert new_token != token
    assert renewed.device_id == first.device_id
    assert first.device_id != bot.device_id, "its own device, named device_name"
