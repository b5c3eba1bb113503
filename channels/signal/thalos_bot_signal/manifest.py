"""The Signal channel as the core sees it before it runs (nothing that talks to
signal-cli is imported here): see :mod:`thalos_bot.channels.manifest`."""

from __future__ import annotations

from pydantic import BaseModel

from thalos_bot.channels.admission.allowlist import Seat
from thalos_bot.channels.manifest import Admission, Manifest, Pairing, Secret, Setup
from thalos_bot_signal import ACCOUNT_ENV
from thalos_bot_signal.addressing import Place
from thalos_bot_signal.config import SignalConfig


def _seat(conversation_id: str) -> Seat[str]:
    place = Place.parse(conversation_id)
    return Seat(user=place.id) if place.kind == "dm" else Seat(group=place.id)


def _summary(config: BaseModel) -> str:
    assert isinstance(config, SignalConfig)
    groups = f" and {len(config.groups)} group(s) by mention" if config.groups else ""
    return (
        f"one-to-one chats{groups} with {len(config.allowed_users)} allowed user(s) via "
        f"signal-cli at {config.daemon_url}, {config.principal_note()}"
    )


manifest = Manifest(
    name="signal",
    config_model=SignalConfig,
    summary=_summary,
    runtime="thalos_bot_signal.plugin:plugin",
    env=(ACCOUNT_ENV,),
    admission=Admission(_seat, "Signal"),
    checks="thalos_bot_signal.doctor:signal_checks",
    pairing=Pairing("Signal", "your Signal number", "thalos_bot_signal.pair"),
    setup=Setup(
        "Use Signal (through signal-cli)?",
        order=50,
        keys=(
            ("daemon_url", "tcp://127.0.0.1:7583", "signal-cli daemon --tcp"),
            ("groups", [], "group ids where it answers a mention"),
        ),
        secrets=(Secret(ACCOUNT_ENV, "the bot's number, registered or linked in signal-cli"),),
        pair_step="finds your Signal number, turns Signal on",
    ),
    install="from a checkout, `pip install ./channels/signal` into the same environment; "
    "signal-cli runs beside it (docs/signal.md)",
    connection=lambda config: True,
)
