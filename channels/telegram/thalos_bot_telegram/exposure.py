"""The webhook listener (``mode = "webhook"``) as ``thalos-bot doctor --security``
scores it. Polling opens no port, so it has no lines."""

from __future__ import annotations

from pydantic import BaseModel

from thalos_bot.channels.checks import Check
from thalos_bot.channels.listeners.scored import bind_check, limits_check
from thalos_bot_telegram import SECRET_ENV
from thalos_bot_telegram.config import WEBHOOK_BODY_LIMIT, TelegramConfig

LISTENER = "telegram webhook listener"


def telegram_exposure(config: BaseModel) -> list[Check]:
    assert isinstance(config, TelegramConfig)
    if config.mode != "webhook":
        return []
    listen = config.webhook_listen
    return [
        bind_check(
            LISTENER,
            listen,
            listen.rpartition(":")[0].strip("[]"),
            local="this machine only, behind the balancer",
            public=": its plain HTTP port is reachable beyond the balancer",
            outcome="warn",
            fix="let only the balancer reach it (a private network or a firewall rule), or "
            'webhook_listen = "127.0.0.1:8081" with the balancer on this machine',
        ),
        Check(f"{LISTENER} auth", "ok", f"Telegram's secret token header (${SECRET_ENV})"),
        Check(f"{LISTENER} TLS", "ok", f"Telegram posts only to https: {config.webhook_url}"),
        limits_check(
            LISTENER,
            header_timeout=config.webhook_header_timeout,
            bodies=f"{WEBHOOK_BODY_LIMIT // (1024 * 1024)} MiB, counted as they arrive",
            max_connections=config.webhook_connection_cap,
            rate_limit=config.webhook_rate_limit,
            rate_burst=config.webhook_rate_burst,
            burst_note="; health checks not counted",
            after="; unknown senders stored nothing",
            unlimited="warn",
            fix="webhook_rate_limit = 6000 in [channels.telegram] (the balancer's one "
            "address carries all of Telegram's deliveries well within it)",
        ),
    ]
