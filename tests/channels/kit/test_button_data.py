"""What a question's button carries (:class:`~thalos_bot.channels.approvals.buttons.
ButtonData`): each platform's data is pinned as its buttons already in chats carry it, so
a press on one still answers after an upgrade, and a replica of either version reads the
other's."""

from __future__ import annotations

import re

import pytest

from thalos_bot.channels.approvals.buttons import ButtonData
from thalos_bot_discord.approvals import DATA as DISCORD
from thalos_bot_slack.approvals import DATA as SLACK
from thalos_bot_telegram.approvals import DATA as TELEGRAM

T = "Ab3_-x9QzK1w"  # a token as Asking.token() makes one

SHIPPED = {  # once, for the session, deny
    "discord": (
        DISCORD,
        [f"thalos:approved:{T}", f"thalos:approved-session:{T}", f"thalos:denied:{T}"],
    ),
    "telegram": (TELEGRAM, [f"ap:{T}:y", f"ap:{T}:s", f"ap:{T}:n"]),
    # Slack's action id and value, joined by ":"
    "slack": (SLACK, [f"thalos_approve:{T}", f"thalos_approve_session:{T}", f"thalos_deny:{T}"]),
}


@pytest.mark.parametrize("platform", SHIPPED)
def test_each_platform_carries_what_its_shipped_buttons_carry(platform: str) -> None:
    data, shipped = SHIPPED[platform]
    assert [b.data for b in data.buttons(T)] == shipped
    verdicts = ["approved", "approved-session", "denied"]
    assert [data.read(d) for d in shipped] == [(T, v) for v in verdicts]
    assert [b.verdict for b in data.buttons(T)] == verdicts


@pytest.mark.parametrize(
    "foreign",
    [
        "",
        "thalos:approved:",
        "thalos::" + T,
        "thalos:maybe:" + T,
        "thalos:approved:" + T + ":more",
        "other:approved:" + T,
        "ap:" + T + ":approved",  # another platform's layout
        "thalos_approve",  # Slack's action id without its value
        "thalos_approve:" + T + ":" + T,
    ],
)
def test_data_no_question_button_carries_is_not_read(foreign: str) -> None:
    assert [data.read(foreign) for data in (DISCORD, TELEGRAM, SLACK)] == [None, None, None]


@pytest.mark.parametrize(
    "layout", ["thalos:{verdict}", "{token}:{token}:{verdict}", "x", "{verdict}"]
)
def test_a_layout_without_one_verdict_and_one_token_is_refused(layout: str) -> None:
    with pytest.raises(ValueError, match=re.escape("needs one {verdict} and one {token}")):
        ButtonData(layout)
