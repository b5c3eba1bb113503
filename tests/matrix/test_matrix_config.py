"""``[channels.matrix]``: every bad key is named with its file; secrets come from the
environment only."""

from __future__ import annotations

from pathlib import Path

import pytest

from thalos_bot.channels.ports import ChannelFatalError
from thalos_bot.config.loader import ConfigError, validate
from thalos_bot_matrix import PASSWORD_ENV, TOKEN_ENV
from thalos_bot_matrix.client import MatrixClient
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.session import sign_in

GOOD = {
    "enabled": True,
    "homeserver": "https://matrix.example.org/",
    "user_id": "@thalos:example.org",
    "allowed_users": ["@alice:example.org"],
}


def _problems(**changes: object) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        validate(MatrixConfig, {**GOOD, **changes}, "bot.toml", "channels.matrix")
    return raised.value.problems


def test_a_good_section_is_taken_and_room_ids_of_both_shapes_are_accepted() -> None:
    config = validate(
        MatrixConfig,
        {**GOOD, "rooms": ["!abc:example.org", "!Xy9_-hashonly"]},
        "bot.toml",
        "channels.matrix",
    )
    assert config.homeserver == "https://matrix.example.org"


@pytest.mark.parametrize(
    ("changes", "key", "words"),
    [
        ({"allowed_users": ["alice"]}, "allowed_users", "not a full Matrix user id"),
        ({"allowed_users": []}, "allowed_users", "never means everyone"),
        ({"user_id": "thalos"}, "user_id", "@name:server"),
        ({"rooms": ["#general:example.org"]}, "rooms", "that is an alias"),
        ({"homeserver": ""}, "channels.matrix", "homeserver"),
        ({"access_token": "x"}, "access_token", "THALOS_MATRIX_ACCESS_TOKEN"),
        ({"password": "x"}, "password", "secrets never go in bot.toml"),
    ],
)
def test_a_bad_key_is_named_with_the_file(changes: dict[str, object], key: str, words: str) -> None:
    problems = _problems(**changes)
    assert len(problems) == 1
    assert problems[0].startswith("bot.toml: channels.matrix")
    assert key in problems[0]
    assert words in problems[0]


def test_encryption_can_be_turned_on() -> None:
    assert MatrixConfig.model_validate({**GOOD, "encryption": True}).encryption is True


@pytest.mark.anyio
async def test_no_secret_in_the_environment_names_both_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    config = MatrixConfig.model_validate(GOOD)
    client = MatrixClient(config.homeserver, None, timeout=1)
    try:
        with pytest.raises(ChannelFatalError) as raised:
            await sign_in(client, config, tmp_path)
    finally:
        await client.aclose()
    assert TOKEN_ENV in raised.value.message
    assert PASSWORD_ENV in raised.value.message
    assert raised.value.exit_code == 2
