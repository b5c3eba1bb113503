"""``thalos-bot doctor`` checks for the Signal channel: signal-cli's daemon reachable,
and the bot's account registered in it."""

from __future__ import annotations

import os

import httpx

from thalos_bot.channels.checks import Check
from thalos_bot.domain.unreachable import unreachable_cause
from thalos_bot_signal import ACCOUNT_ENV
from thalos_bot_signal.config import NUMBER, SignalConfig
from thalos_bot_signal.rpc import METHOD_NOT_FOUND, HttpStatusError, RpcError, SignalRpc

DAEMON = "signal-cli daemon"
ACCOUNT = "Signal account"


async def signal_checks(config: SignalConfig, *, offline: bool) -> list[Check]:
    if offline:
        return [Check(DAEMON, "skip", "--offline")]
    account = os.environ.get(ACCOUNT_ENV, "").strip()
    rpc = SignalRpc(config.daemon_url, account, timeout=15.0)
    try:
        try:
            up = await rpc.check()
        except httpx.HTTPError as exc:
            return [
                Check(
                    DAEMON,
                    "fail",
                    f"cannot reach {config.daemon_url}: {unreachable_cause(exc)}",
                    "start it (`systemctl status signal-cli`), with --http on that address",
                )
            ]
        if not up:
            return [
                Check(DAEMON, "fail", f"{config.daemon_url} is not signal-cli's --http endpoint")
            ]
        checks = [Check(DAEMON, "ok", config.daemon_url)]
        if not NUMBER.match(account):
            checks.append(Check(ACCOUNT, "skip", f"{ACCOUNT_ENV} is not set"))
            return checks
        checks.append(await _registered(rpc))
        return checks
    finally:
        await rpc.aclose()


async def _registered(rpc: SignalRpc) -> Check:
    fix = "register or link the number with signal-cli (docs/signal.md)"
    try:
        accounts = await rpc.call("listAccounts")
    except RpcError as exc:
        if exc.code != METHOD_NOT_FOUND:
            return Check(ACCOUNT, "fail", f"signal-cli answered error {exc.code}", fix)
        return Check(ACCOUNT, "ok", "the daemon serves one account (started with -a)")
    except (httpx.HTTPError, HttpStatusError) as exc:
        return Check(ACCOUNT, "fail", f"signal-cli did not answer: {type(exc).__name__}")
    numbers = {a.get("number") for a in accounts or [] if isinstance(a, dict)}
    if rpc.account in numbers:
        return Check(ACCOUNT, "ok", f"{ACCOUNT_ENV} is registered in the daemon")
    return Check(ACCOUNT, "fail", f"the number in {ACCOUNT_ENV} is not registered there", fix)
