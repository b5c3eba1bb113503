"""The Signal channel as the core sees it before it runs (nothing that talks to
signal-cli is imported here): see :mod:`thalos_bot.channels.manifest`."""

from __future__ import annotations

from thalos_bot.channels.admission.allowlist import Seat
from thalos_bot.channels.manifest import Admission, Secret, plug_in
from thalos_bot_signal import ACCOUNT_ENV
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.config import SignalConfig


def _seat(conversation_id: str) -> Seat[str]:
    place = Place.parse(conversation_id)
    return Seat(user=place.id) if place.kind == "dm" else Seat(group=place.id)


def _summary(config: SignalConfig) -> str:
    groups = f" and {len(config.groups)} group(s) by mention" if config.groups else ""
    return (
        f"one-to-one chats{groups} with {len(config.allowed_users)} allowed user(s) via "
        f"signal-cli at {config.daemon_url}, {config.principal_note()}"
    )


manifest = plug_in(
    "signal",
    SignalConfig,
    _summary,
    admission=Admission(_seat, "Signal"),
    finds="your Signal number",
    order=50,
    question="Use Signal (through signal-cli)?",
    keys=(
        ("daemon_url", "tcp://127.0.0.1:7583", "signal-cli daemon --tcp"),
        ("groups", [], "group ids where it answers a mention"),
    ),
    secrets=(Secret(ACCOUNT_ENV, "the bot's number, registered or linked in signal-cli"),),
    install_note="; signal-cli runs beside it (docs/signal.md)",
    connection=lambda config: True,
)
