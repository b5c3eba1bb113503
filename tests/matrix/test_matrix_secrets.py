"""The Matrix credentials are kept from the logs as soon as they are read (the
environment's token and password, the kept device's token, the login answer's), without
a homeserver: a fake one as strict as Synapse about tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from thalos_bot.telemetry.redact import redact
from thalos_bot_matrix import PASSWORD_ENV, TOKEN_ENV
from thalos_bot_matrix.client import JSON, MatrixError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.session import secrets_from_env, sign_in
from thalos_bot_matrix.state import device_path

pytestmark = pytest.mark.anyio

USER = "@bot:example.org"
KEPT_TOKEN = "syt_Ym90_kept_token_from_the_device_file"
NEW_TOKEN = "syt_Ym90_fresh_token_from_the_login_answer"


@pytest.fixture(autouse=True)
def fresh_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no registered secret and leaves none behind."""
    monkeypatch.setattr("thalos_bot.telemetry.redact._extra_secrets", set())


class Homeserver:
    """``whoami`` and ``login`` as Synapse answers them: an unknown token is a 401
    ``M_UNKNOWN_TOKEN``, a wrong password a 403 ``M_FORBIDDEN``."""

    def __init__(self, password: str, known: set[str]) -> None:
        self.token: str | None = None
        self._password = password
        self._known = known

    async def whoami(self) -> JSON:
        if self.token not in self._known:
            raise MatrixError(401, "M_UNKNOWN_TOKEN")
        return {"user_id": USER, "device_id": "DEVICE"}

    async def login(self, user: str, password: str, name: str, device: str | None) -> JSON:
        if user != USER or password != self._password:
            raise MatrixError(403, "M_FORBIDDEN")
        self._known.add(NEW_TOKEN)
        return {"user_id": USER, "access_token": NEW_TOKEN, "device_id": device or "NEW"}


def _config() -> MatrixConfig:
    return MatrixConfig.model_validate({"homeserver": "https://example.org", "user_id": USER})


def _keep_device(state: Path) -> None:
    path = device_path(state, USER)
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = {"user_id": USER, "device_id": "DEVICE", "access_token": KEPT_TOKEN}
    path.write_text(json.dumps(kept))


def test_the_token_and_the_password_are_kept_from_the_logs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token, password = "syt_bWF0cml4_token_0123456789", "a long password"
    monkeypatch.setenv(TOKEN_ENV, token)
    monkeypatch.setenv(PASSWORD_ENV, password)
    assert redact(f"{token} {password}") == f"{token} {password}", "not kept before it is read"
    secrets_from_env()
    said = redact(f"failed with {token} and {password}")
    assert token not in said
    assert password not in said


@pytest.mark.parametrize("known", [{KEPT_TOKEN}, set()], ids=["kept works", "kept revoked"])
async def test_a_password_logins_tokens_are_kept_from_the_logs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, known: set[str]
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.setenv(PASSWORD_ENV, "the bot's password")
    _keep_device(tmp_path)
    server = Homeserver("the bot's password", set(known))
    client: Any = server
    await sign_in(client, _config(), tmp_path)
    said = redact(f"sync failed with {KEPT_TOKEN} then {NEW_TOKEN}")
    tokens = {"the device file's": KEPT_TOKEN}
    if not known:
        assert server.token == NEW_TOKEN
        tokens["the login answer's"] = NEW_TOKEN
    assert [name for name, token in tokens.items() if token in said] == []
