"""The web listener as ``thalos-bot doctor --security`` scores it: where it binds, who
may use it, how TLS reaches it, and its limits. The page, its API (``api = true``) and
the webhooks share this one listener, so one set of lines covers them."""

from __future__ import annotations

from pydantic import BaseModel

from thalos_bot.channels.checks import Check
from thalos_bot.channels.listeners.address import is_loopback
from thalos_bot.channels.listeners.scored import bind_check, limits_check
from thalos_bot_web.config import UPLOAD_LIMIT, WebConfig

SMALL_BODY_KIB = 64
HOOK_BODY_MIB = 1
LISTENER = "web listener"


def web_exposure(config: BaseModel) -> list[Check]:
    assert isinstance(config, WebConfig)
    loopback = is_loopback(config.host)
    owners = config.owners or config.principals[:1]
    who = ", ".join(config.principals)
    auth = [f"page: one-time pairing links, logins for {who} (owners: {', '.join(owners)})"]
    if config.api:
        auth.append("/v1 API: keys from `thalos-bot api key create`")
    # Anything not loopback is public, and WebConfig refuses a public listener without
    # both a named proxy and an https:// public_url.
    proxies = ", ".join(config.forwarded_allow_ips)
    tls = f"behind the TLS proxy at {proxies} ({config.public_url})"
    return [
        bind_check(
            LISTENER,
            config.listen,
            config.host,
            local="this machine only",
            public=", reachable from other machines (public)",
        ),
        Check(f"{LISTENER} auth", "ok", "; ".join(auth)),
        Check(
            f"{LISTENER} TLS",
            "ok",
            "loopback only: nothing crosses the network" if loopback else tls,
        ),
        limits_check(
            LISTENER,
            header_timeout=config.header_timeout,
            bodies=f"{SMALL_BODY_KIB} KiB (forms), {UPLOAD_LIMIT // (1024 * 1024)} MiB a file, "
            f"{HOOK_BODY_MIB} MiB (webhooks)",
            max_connections=config.max_connections,
            rate_limit=config.rate_limit,
            rate_burst=config.rate_burst,
            unlimited="ok" if loopback else "fail",
            fix="remove rate_limit = 0 from [channels.web] (the default is 1200 a minute), "
            "or set the figure you want",
        ),
    ]
