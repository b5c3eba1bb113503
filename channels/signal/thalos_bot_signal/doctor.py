"""``thalos-bot doctor`` checks for the Signal channel: signal-cli's daemon reachable,
and the bot's account registered in it."""

from __future__ import annotations

import os

from thalos_bot.channels.checks import Check
from thalos_bot_signal import ACCOUNT_ENV, rpc
from thalos_bot_signal.config import NUMBER, SignalConfig
from thalos_bot_signal.rpc import METHOD_NOT_FOUND, DaemonDownError, RpcError, SignalRpc

DAEMON = "signal-cli daemon"
ACCOUNT = "Signal account"
REGISTER = "register or link the number with signal-cli (docs/signal.md)"
START = "start it (`systemctl status signal-cli`) with --tcp or --socket there"


async def signal_checks(config: SignalConfig, *, offline: bool) -> list[Check]:
    if offline:
        return [Check(DAEMON, "skip", "--offline")]
    account = os.environ.get(ACCOUNT_ENV, "").strip()
    try:
        accounts = await SignalRpc(config.daemon_url, account, timeout=15.0).call("listAccounts")
    except DaemonDownError:
        return [Check(DAEMON, "fail", f"nothing listens at {config.daemon_url}", START)]
    except RpcError as exc:
        if exc.code != METHOD_NOT_FOUND:
            return [Check(DAEMON, "fail", f"signal-cli answered error {exc.code}")]
        accounts = None  # started with -a: it serves that one account
    except (rpc.ConnectionLostError, TimeoutError):
        return [Check(DAEMON, "fail", f"{config.daemon_url} does not answer as signal-cli")]
    checks = [Check(DAEMON, "ok", config.daemon_url)]
    if not NUMBER.match(account):
        checks.append(Check(ACCOUNT, "skip", f"{ACCOUNT_ENV} is not set"))
    elif accounts is None:
        checks.append(Check(ACCOUNT, "ok", "the daemon serves one account (started with -a)"))
    elif account in {a.get("number") for a in accounts if isinstance(a, dict)}:
        checks.append(Check(ACCOUNT, "ok", f"the number in {ACCOUNT_ENV} is registered there"))
    else:
        checks.append(
            Check(ACCOUNT, "fail", f"the number in {ACCOUNT_ENV} is not registered there", REGISTER)
        )
    return checks
