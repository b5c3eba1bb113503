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


def _bind(config: WebConfig) -> Check:
    public = ", reachable from other machines (public)"
    return bind_check(
        LISTENER, config.listen, config.host, local="this machine only", public=public
    )


def _auth(config: WebConfig) -> Check:
    owners = config.owners or config.principals[:1]
    who = ", ".join(config.principals)
    parts = [f"page: one-time pairing links, logins for {who} (owners: {', '.join(owners)})"]
    if config.api:
        parts.append("/v1 API: keys from `thalos-bot api key create`")
    return Check(f"{LISTENER} auth", "ok", "; ".join(parts))


def _tls(config: WebConfig) -> Check:
    name = f"{LISTENER} TLS"
    if is_loopback(config.host):
        return Check(name, "ok", "loopback only: nothing crosses the network")
    # Anything else is public, and WebConfig refuses a public listener without both a
    # named proxy and an https:// public_url.
    proxies = ", ".join(config.forwarded_allow_ips)
    return Check(name, "ok", f"behind the TLS proxy at {proxies} ({config.public_url})")


def _limits(config: WebConfig) -> Check:
    return limits_check(
        LISTENER,
        header_timeout=config.header_timeout,
        bodies=f"{SMALL_BODY_KIB} KiB (forms), {UPLOAD_LIMIT // (1024 * 1024)} MiB a file, "
        f"{HOOK_BODY_MIB} MiB (webhooks)",
        max_connections=config.max_connections,
        rate_limit=config.rate_limit,
        rate_burst=config.rate_burst,
        unlimited="ok" if is_loopback(config.host) else "fail",
        fix="remove rate_limit = 0 from [channels.web] (the default is 1200 a minute), "
        "or set the figure you want",
    )


def web_exposure(config: BaseModel) -> list[Check]:
    assert isinstance(config, WebConfig)
    return [_bind(config), _auth(config), _tls(config), _limits(config)]
