"""Add a Matrix user to ``allowed_users`` in ``bot.toml`` (see
:mod:`thalos_bot.channels.admission.config_edit`)."""

from __future__ import annotations

from pathlib import Path

from thalos_bot.channels.admission.config_edit import Added, add_allowed


def add_allowed_user(path: Path, user_id: str) -> Added:
    return add_allowed(path, "matrix", "allowed_users", user_id)
