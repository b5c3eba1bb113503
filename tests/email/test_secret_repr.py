"""A pairing side's or the receiver's secret is never in its repr (a log of the object,
a traceback's locals): the email plug-in's, and the Slack and Discord pair sides'."""

from __future__ import annotations

import dataclasses

import pytest

from thalos_bot_discord.pair import DiscordSide
from thalos_bot_email.pair import EmailSide
from thalos_bot_email.receiver import Receiver
from thalos_bot_slack.pair import SlackSide


@pytest.mark.parametrize(
    ("kind", "secret"),
    [
        (Receiver, "password"),
        (EmailSide, "password"),
        (SlackSide, "tokens"),
        (DiscordSide, "token"),
    ],
)
def test_a_secret_is_kept_out_of_the_repr(kind: type, secret: str) -> None:
    [field] = [f for f in dataclasses.fields(kind) if f.name == secret]
    assert field.repr is False


def test_the_receiver_repr_does_not_show_its_password() -> None:
    receiver = Receiver(*[None] * 6)  # type: ignore[arg-type]
    receiver.password = "hunter2-not-shown"
    assert "hunter2-not-shown" not in repr(receiver)
