"""``thalos-bot doctor`` checks for the Matrix channel: the homeserver and the account."""

from __future__ import annotations

import os

from thalos_bot.channels.checks import Check
from thalos_bot_matrix import PASSWORD_ENV, TOKEN_ENV
from thalos_bot_matrix.client import MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.config import MatrixConfig

NAME = "Matrix whoami"


async def matrix_checks(config: MatrixConfig, *, offline: bool) -> list[Check]:
    if offline:
        return [Check(NAME, "skip", "--offline")]
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        why = f"{TOKEN_ENV} is not set"
        if os.environ.get(PASSWORD_ENV):
            why += f" ({PASSWORD_ENV} is: the daemon logs in with it at start)"
        return [Check(NAME, "skip", why)]
    client = MatrixClient(config.homeserver, token, timeout=config.request_timeout)
    try:
        data = await client.whoami()
    except MatrixError as exc:
        return [
            Check(
                NAME,
                "fail",
                f"the homeserver refused the token in {TOKEN_ENV} ({exc.errcode})",
                "make a new one (Element: Settings → Help & About → Access Token)",
            )
        ]
    except UnreachableError as exc:
        return [
            Check(
                NAME, "fail", f"cannot reach {config.homeserver}: {exc.reason}", "check homeserver"
            )
        ]
    finally:
        await client.aclose()
    who = data.get("user_id")
    if who != config.user_id:
        return [
            Check(NAME, "fail", f"the token is {who!r}'s, not {config.user_id!r}", "fix user_id")
        ]
    return [Check(NAME, "ok", f"{who} (device {data.get('device_id', '?')})")]
