"""The webhook listener (``mode = "webhook"``) as ``thalos-bot doctor --security``
scores it. Polling opens no port, so it has no lines."""

from __future__ import annotations

from pydantic import BaseModel

from thalos_bot.channels.checks import Check
from thalos_bot.channels.listeners.address import is_loopback
from thalos_bot_telegram import SECRET_ENV
from thalos_bot_telegram.config import TelegramConfig

LISTENER = "telegram webhook listener"


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
        Check(
            f"{LISTENER} limits",
            "ok",
            "bodies 1 MiB; unknown senders stored nothing; the balancer in front bounds "
            "connections and timeouts (deploy/haproxy.cfg)",
        ),
    ]
