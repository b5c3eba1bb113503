"""The webhook listener (``mode = "webhook"``) as ``thalos-bot doctor --security``
scores it. Polling opens no port, so it has no lines."""

from __future__ import annotations

from pydantic import BaseModel

from thalos_bot.channels.checks import Check
from thalos_bot.channels.listeners.address import is_loopback
from thalos_bot_telegram import SECRET_ENV
from thalos_bot_telegram.config import WEBHOOK_BODY_LIMIT, TelegramConfig

LISTENER = "telegram webhook listener"


def _limits(config: TelegramConfig) -> Check:
    rate = (
        f"{config.webhook_rate_limit} requests/min per address "
        f"(burst {config.webhook_rate_burst}; health checks not counted)"
        if config.webhook_rate_limit
        else "no per-address rate limit"
    )
    detail = (
        f"header timeout {config.webhook_header_timeout:g}s; bodies "
        f"{WEBHOOK_BODY_LIMIT // (1024 * 1024)} MiB, counted as they arrive; at most "
        f"{config.webhook_connection_cap} connections; {rate}; unknown senders stored nothing"
    )
    if config.webhook_rate_limit == 0:
        return Check(
            f"{LISTENER} limits",
            "warn",
            detail,
            "webhook_rate_limit = 6000 in [channels.telegram] (the balancer's one address "
            "carries all of Telegram's deliveries well within it)",
        )
    return Check(f"{LISTENER} limits", "ok", detail)


def telegram_exposure(config: BaseModel) -> list[Check]:
    assert isinstance(config, TelegramConfig)
    if config.mode != "webhook":
        return []
    listen = config.webhook_listen
    bind = (
        Check(f"{LISTENER} bind", "ok", f"{listen} (this machine only, behind the balancer)")
        if is_loopback(listen.rpartition(":")[0].strip("[]"))
        else Check(
            f"{LISTENER} bind",
            "warn",
            f"{listen}: its plain HTTP port is reachable beyond the balancer",
            "let only the balancer reach it (a private network or a firewall rule), or "
            'webhook_listen = "127.0.0.1:8081" with the balancer on this machine',
        )
    )
    return [
        bind,
        Check(f"{LISTENER} auth", "ok", f"Telegram's secret token header (${SECRET_ENV})"),
        Check(f"{LISTENER} TLS", "ok", f"Telegram posts only to https: {config.webhook_url}"),
        _limits(config),
    ]
