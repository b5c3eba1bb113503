"""``thalos-bot doctor``'s Matrix check against the real Synapse: the token's owner, a
token refused, another account's token."""

from __future__ import annotations

import pytest

from tests.matrix.accounts import register, unique
from tests.matrix.synapse import SynapseServer
from thalos_bot_matrix import PASSWORD_ENV, TOKEN_ENV
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.doctor import matrix_checks

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_the_check_names_the_account_and_a_refused_or_wrong_token(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot = await register(synapse, unique("bot"))
    other = await register(synapse, unique("other"))
    config = MatrixConfig.model_validate({"homeserver": synapse.base_url, "user_id": bot.user_id})
    monkeypatch.setenv(TOKEN_ENV, bot.access_token)
    [ok] = await matrix_checks(config, offline=False)
    monkeypatch.setenv(TOKEN_ENV, "syt_not_a_token")
    [refused] = await matrix_checks(config, offline=False)
    monkeypatch.setenv(TOKEN_ENV, other.access_token)
    [wrong] = await matrix_checks(config, offline=False)
    [skipped] = await matrix_checks(config, offline=True)
    assert ok.outcome == "ok"
    assert bot.user_id in ok.detail
    assert refused.outcome == "fail"
    assert "M_UNKNOWN_TOKEN" in refused.detail
    assert "syt_not_a_token" not in refused.detail
    assert wrong.outcome == "fail"
    assert other.user_id in wrong.detail
    assert skipped.outcome == "skip"


async def test_without_a_token_the_check_is_skipped_and_says_a_password_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = MatrixConfig.model_validate(
        {"homeserver": "http://127.0.0.1:9", "user_id": "@bot:example.org"}
    )
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    [unset] = await matrix_checks(config, offline=False)
    monkeypatch.setenv(PASSWORD_ENV, "a password")
    [password] = await matrix_checks(config, offline=False)
    [offline] = await matrix_checks(config, offline=True)
    assert (unset.outcome, unset.detail) == ("skip", f"{TOKEN_ENV} is not set")
    assert password.outcome == "skip"
    assert password.detail == (
        f"{TOKEN_ENV} is not set ({PASSWORD_ENV} is: the daemon logs in with it at start)"
    )
    assert "a password" not in password.detail
    assert (offline.outcome, offline.detail) == ("skip", "--offline")
