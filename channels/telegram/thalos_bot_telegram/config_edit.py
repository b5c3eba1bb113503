"""Add a Telegram user to ``allowed_user_ids`` in ``bot.toml`` (see
:mod:`thalos_bot.channels.admission.config_edit`)."""

from __future__ import annotations

from pathlib import Path

from thalos_bot.channels.admission.config_edit import Added, add_allowed


def add_allowed_user(path: Path, user_id: int) -> Added:
    return add_allowed(path, "telegram", "allowed_user_ids", user_id)
