"""``thalos-bot doctor`` checks for the Matrix channel: the homeserver and the account."""

from __future__ import annotations

import os
from dataclasses import replace

from thalos_bot.channels.checks import Check, skipped, unreachable
from thalos_bot.channels.ports import EXIT_UNAUTHORIZED, ChannelFatalError
from thalos_bot_matrix import PASSWORD_ENV, TOKEN_ENV
from thalos_bot_matrix.client import MatrixClient, UnreachableError
from thalos_bot_matrix.config import MatrixConfig
from thalos_bot_matrix.session import whoami

NAME = "Matrix whoami"
REFUSED_FIX = "make a new one (Element: Settings → Help & About → Access Token)"


async def matrix_checks(config: MatrixConfig, *, offline: bool) -> list[Check]:
    if (skip := skipped(NAME, TOKEN_ENV, offline=offline)) is not None:
        if not offline and os.environ.get(PASSWORD_ENV):
            why = f"{PASSWORD_ENV} is: the daemon logs in with it at start"
            skip = replace(skip, detail=f"{skip.detail} ({why})")
        return [skip]
    token = os.environ[TOKEN_ENV].strip()
    client = MatrixClient(config.homeserver, token, timeout=config.request_timeout)
    try:
        identity = await whoami(client, config, TOKEN_ENV)
    except ChannelFatalError as exc:  # refused, or another account's token
        fix = REFUSED_FIX if exc.exit_code == EXIT_UNAUTHORIZED else "fix user_id"
        return [Check(NAME, "fail", exc.message, fix)]
    except UnreachableError as exc:
        return [unreachable(NAME, config.homeserver, exc.reason, "check homeserver")]
    finally:
        await client.aclose()
    return [Check(NAME, "ok", f"{identity.user_id} (device {identity.device_id or '?'})")]
