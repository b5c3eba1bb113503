"""Who the bot is on the homeserver: an access token from the environment, or a password
login whose device and token are kept (0600) for the next start.

Keeping the device matters beyond saving a login: the homeserver remembers transaction
ids per device, so only the same device makes a retried send after a restart the same
request (:mod:`.wire`). The token file is used only while its password login
still works: a token the homeserver no longer knows is replaced by a fresh login on the
same device.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import anyio

from thalos_bot.channels.kept import read_json, write_private
from thalos_bot.channels.ports import EXIT_CONFIG, EXIT_UNAUTHORIZED, ChannelFatalError
from thalos_bot.telemetry.redact import register_secret
from thalos_bot_matrix import PASSWORD_ENV, TOKEN_ENV
from thalos_bot_matrix.client import MatrixClient, MatrixError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.state import device_path


@dataclass(frozen=True, slots=True)
class Identity:
    user_id: str
    device_id: str | None


def secrets_from_env() -> tuple[str | None, str | None]:
    """The access token and the password, each kept from the logs as it is read."""
    token = os.environ.get(TOKEN_ENV, "").strip() or None
    password = os.environ.get(PASSWORD_ENV, "") or None
    register_secret(token)
    register_secret(password)
    return token, password


async def sign_in(client: MatrixClient, config: MatrixConfig, state_dir: Path) -> Identity:
    """Set ``client.token`` and check it with ``whoami``. Raises ChannelFatalError with
    a message naming the variable when neither is set or the homeserver refuses it."""
    token, password = secrets_from_env()
    if token is None and password is None:
        raise ChannelFatalError(
            f"matrix: set {TOKEN_ENV} (or {PASSWORD_ENV}) in the environment; "
            "bot.toml never holds it",
            EXIT_CONFIG,
        )
    if token is not None:
        client.token = token
        return await whoami(client, config, TOKEN_ENV)
    assert password is not None
    path = device_path(state_dir, config.user_id)
    saved = read_json(path)
    saved_token, device = saved.get("access_token"), saved.get("device_id")
    if isinstance(saved_token, str) and saved_token:
        register_secret(saved_token)  # kept from the logs as the environment's are
        client.token = saved_token
        try:
            return await whoami(client, config, PASSWORD_ENV)
        except ChannelFatalError:
            client.token = None  # forgotten by the homeserver: log in again, same device
    try:
        answer = await client.login(
            config.user_id,
            password,
            config.device_name,
            device if isinstance(device, str) else None,
        )
    except MatrixError as exc:
        raise ChannelFatalError(
            f"matrix: the homeserver refused the login of {config.user_id} ({exc.errcode}): "
            f"check {PASSWORD_ENV}",
            EXIT_UNAUTHORIZED,
        ) from None
    new_token, new_device = answer.get("access_token"), answer.get("device_id")
    if not isinstance(new_token, str) or not isinstance(new_device, str):
        raise ChannelFatalError("matrix: the login answer carried no token", EXIT_UNAUTHORIZED)
    register_secret(new_token)
    client.token = new_token
    await anyio.to_thread.run_sync(
        write_private,
        path,
        {"user_id": config.user_id, "device_id": new_device, "access_token": new_token},
    )
    return await whoami(client, config, PASSWORD_ENV)


async def whoami(client: MatrixClient, config: MatrixConfig, source: str) -> Identity:
    """Who ``client.token`` (from ``source``) signs in as; refused unless the homeserver
    knows it as ``config.user_id``."""
    try:
        data = await client.whoami()
    except MatrixError as exc:
        raise ChannelFatalError(
            f"matrix: the homeserver refused the credentials from {source} ({exc.errcode})",
            EXIT_UNAUTHORIZED,
        ) from None
    user_id = data.get("user_id")
    if user_id != config.user_id:
        raise ChannelFatalError(
            f"matrix: the credentials from {source} are {user_id!r}, not channels.matrix.user_id "
            f"{config.user_id!r}",
            EXIT_CONFIG,
        )
    device = data.get("device_id")
    return Identity(config.user_id, device if isinstance(device, str) else None)
