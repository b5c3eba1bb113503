"""The Slack channel for thalos-bot: Socket Mode, direct messages and threads.

This package is the only code that imports ``slack-bolt`` and ``slack-sdk``.
"""

from __future__ import annotations

APP_TOKEN_ENV = "SLACK_APP_TOKEN"  # noqa: S105 - the variable's name, not a secret
"""The app-level token (``xapp-…``, scope ``connections:write``): opens Socket Mode."""
BOT_TOKEN_ENV = "SLACK_BOT_TOKEN"  # noqa: S105 - the variable's name, not a secret
"""The bot token (``xoxb-…``): every Web API call, and file downloads."""
