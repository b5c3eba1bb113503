"""The Signal channel for thalos-bot: signal-cli's daemon over its JSON-RPC interface
(HTTP requests and the server-sent events stream), one-to-one chats and groups by
mention.

This package is the only code that speaks to signal-cli. It registers itself as the
``signal`` channel under the ``thalos_bot.channels`` entry-point group.
"""

from __future__ import annotations

ACCOUNT_ENV = "THALOS_SIGNAL_ACCOUNT"
"""The bot's own number (E.164, e.g. ``+4915112345678``): personal data, read only from
the environment and redacted from every log line."""

__all__ = ["ACCOUNT_ENV"]
