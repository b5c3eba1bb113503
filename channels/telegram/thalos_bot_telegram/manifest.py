"""The Telegram channel as the core sees it before it runs (no python-telegram-bot
import here): see :mod:`thalos_bot.channels.manifest`."""

from __future__ import annotations

from thalos_bot.channels.admission.allowlist import Seat
from thalos_bot.channels.manifest import Admission, Secret, plug_in
from thalos_bot_telegram import SECRET_ENV, TOKEN_ENV
from thalos_bot_telegram.config import TelegramConfig


def _seat(conversation_id: str) -> Seat[int]:
    """A private chat's id is its user's (positive); a group's (and each of its forum
    topics, ``"<chat>:<thread>"``) is negative."""
    chat = int(conversation_id.partition(":")[0])
    return Seat(user=chat) if chat > 0 else Seat(group=chat)


def _summary(config: TelegramConfig) -> str:
    where = config.base_url or "api.telegram.org"
    groups = f" and {len(config.groups)} group(s)" if config.groups else ""
    return (
        f"private chats{groups} with {len(config.allowed_user_ids)} allowed user(s) via "
        f"{where}, {config.principal_note()}; "
        f"streaming: {config.streaming}"
    )


def _webhook_secret(config: TelegramConfig) -> tuple[str, ...]:
    return (SECRET_ENV,) if config.mode == "webhook" else ()


manifest = plug_in(
    "telegram",
    TelegramConfig,
    _summary,
    env_for=_webhook_secret,
    admission=Admission(_seat, "Telegram chat id"),
    exposure=True,
    finds="your Telegram id",
    pair_module="pair_command",
    order=10,
    secrets=(Secret(TOKEN_ENV, "from @BotFather, /newbot"),),
    pair_now=True,
    install_note=" (README, section Install, has the uv and pipx forms)",
)
