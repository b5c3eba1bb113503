"""The Signal channel for thalos-bot: signal-cli's daemon over its JSON-RPC socket,
one-to-one chats and groups by mention. The only code that speaks to signal-cli."""

from __future__ import annotations

ACCOUNT_ENV = "THALOS_SIGNAL_ACCOUNT"
"""The bot's own number (E.164, e.g. ``+4915112345678``): personal data, read only from
the environment and redacted from every log line."""

__all__ = ["ACCOUNT_ENV"]
