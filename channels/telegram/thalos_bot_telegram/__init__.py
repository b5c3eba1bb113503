"""The Telegram channel for thalos-bot: long polling, private chats, streamed answers.

This package is the only code that imports python-telegram-bot. It registers itself as
the ``telegram`` channel under the ``thalos_bot.channels`` entry-point group.
"""

from __future__ import annotations

TOKEN_ENV = "TELEGRAM_BOT_TOKEN"  # noqa: S105 - the variable's name, not a secret
"""The only place the bot token comes from."""

SECRET_ENV = "THALOS_TELEGRAM_WEBHOOK_SECRET"  # noqa: S105 - a variable's name
"""Webhook mode: the secret Telegram sends with every update (``secret_token``)."""
