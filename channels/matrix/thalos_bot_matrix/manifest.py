"""The Matrix channel as the core sees it before it runs (no python-olm import here): see
:mod:`thalos_bot.channels.manifest`."""

from __future__ import annotations

import argparse

from thalos_bot.channels.admission.allowlist import Seat
from thalos_bot.channels.manifest import Admission, Secret, plug_in
from thalos_bot_matrix import PASSWORD_ENV, PICKLE_KEY_ENV, TOKEN_ENV
from thalos_bot_matrix.config import ROOM_ID, MatrixConfig


def _seat(room: str) -> Seat[str]:
    """A room id says nothing of its person: a listed room is judged as a room, any other
    (a direct room, joined only on an allowed user's invite) while anyone is allowed."""
    if not ROOM_ID.match(room):
        raise ValueError(room)
    return Seat(group=room, direct_unless_listed=True)


def _summary(config: MatrixConfig) -> str:
    rooms = f" and {len(config.rooms)} room(s)" if config.rooms else ""
    return (
        f"direct chats{rooms} with {len(config.allowed_users)} allowed user(s) on "
        f"{config.homeserver or '?'} as {config.user_id or '?'}, {config.principal_note()}; "
        f"streaming: {config.streaming}; encryption: {'on' if config.encryption else 'off'}"
    )


def _shared_env(config: object) -> tuple[str, ...]:
    """On replicas the device's keys are sealed into the shared store with this."""
    return (PICKLE_KEY_ENV,) if getattr(config, "encryption", False) else ()


manifest = plug_in(
    "matrix",
    MatrixConfig,
    _summary,
    env=((TOKEN_ENV, PASSWORD_ENV),),
    admission=Admission(_seat, "Matrix room", groups_key="rooms", group_word="room"),
    finds="your Matrix id",
    pair_module="pair_command",
    order=50,
    keys=(("enabled", False, "set homeserver and user_id, then `thalos-bot matrix pair`"),),
    secrets=(Secret(TOKEN_ENV, "the bot account's access token (Element: Help & About)"),),
    env_shared=_shared_env,
    send_side=True,
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``thalos-bot matrix pair`` (the kit's), ``setup-encryption`` and ``verify``."""
    from thalos_bot_matrix.setup_command import register as register_setup
    from thalos_bot_matrix.verify_command import register as register_verify

    actions = manifest.register(commands)
    assert actions is not None
    register_setup(actions)
    register_verify(actions)
