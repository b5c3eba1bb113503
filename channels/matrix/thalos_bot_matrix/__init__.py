"""The Matrix channel for thalos-bot: direct chats and listed rooms on any homeserver.

This package is the only code that speaks the Matrix client-server API. It registers
itself as the ``matrix`` channel under the ``thalos_bot.channels`` entry-point group.
"""

from __future__ import annotations

TOKEN_ENV = "THALOS_MATRIX_ACCESS_TOKEN"  # noqa: S105 - the variable's name, not a secret
"""Where the bot account's access token comes from (preferred)."""

PASSWORD_ENV = "THALOS_MATRIX_PASSWORD"  # noqa: S105 - the variable's name, not a secret
"""Or its password: the channel logs in once and keeps the device's token in the state
folder (0600), so that the same device (and its transaction ids) survives a restart."""

PICKLE_KEY_ENV = "THALOS_MATRIX_PICKLE_KEY"
"""On replicas (a PostgreSQL store) with encryption: the secret the device's keys are
sealed with before they reach the shared store (the same on every replica)."""
