"""Replicas of the Telegram channel in webhook mode, in this process: each one the real
plugin, pump and runtime (as tests/telegram/harness runs them), sharing one PostgreSQL
store and one Telegram fake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.fakes.telegram_api import TelegramFake
from tests.ports import free_port
from tests.telegram.harness import Bot, running_bot
from thalos_bot.config.models import Settings
from thalos_bot.config.storage import StorageSettings
from thalos_bot.providers.scripted import ScriptedProvider

WEBHOOK_URL = "https://bot.example.com/telegram"


@asynccontextmanager
async def replica(
    fake: TelegramFake,
    url: str,
    *,
    port: int | None = None,
    provider: ScriptedProvider | None = None,
    tmp_path: Path | None = None,
    **overrides: Any,
) -> AsyncIterator[Bot]:
    """One replica listening on ``port`` (a free one by default)."""
    listen = f"127.0.0.1:{port or free_port()}"
    settings = Settings(storage=StorageSettings(url=url))
    values: dict[str, Any] = {
        "mode": "webhook",
        "webhook_url": WEBHOOK_URL,
        "webhook_listen": listen,
        "lease_seconds": 3.0,
    }
    values.update(overrides)
    async with running_bot(fake, provider, tmp_path=tmp_path, settings=settings, **values) as bot:
        yield bot


def listen_port(bot: Bot) -> int:
    return int(bot.config.webhook_listen.rpartition(":")[2])
