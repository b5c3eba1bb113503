"""Fuzzing what Slack hands us: message events and button presses of any shape are
judged or ignored, never raised on (a raise would drop the envelope's other work)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.channels.fuzz_json import shaped
from tests.hypothesis_budget import examples
from thalos_bot.channels.people import Seats
from thalos_bot.domain.people import People
from thalos_bot.domain.security import SecurityContext
from thalos_bot_slack.approvals import SlackApprovals
from thalos_bot_slack.config import SlackConfig
from thalos_bot_slack.inbound import Admission, Admitted, Ledger

OWNER, BOT = "U0OWNER", "U0BOT"
CONFIG = SlackConfig(enabled=True, allowed_users=[OWNER], channels=["C0ROOM"])
users = st.sampled_from([OWNER, BOT, "U0STRANGER"])
events = shaped(
    {"type": st.sampled_from(["message", "app_mention"]), "user": users, "ts": st.just("1.2")},
    {
        "channel": st.sampled_from(["D0DM", "C0ROOM", "C0OTHER"]),
        "text": st.text(max_size=40).map(lambda t: f"<@{BOT}> {t}"),
        "subtype": st.sampled_from(["file_share", "bot_message", "thread_broadcast"]),
        "thread_ts": st.just("1.1"),
        "channel_type": st.just("im"),
        "bot_id": st.just("B1"),
        "team": st.just("T1"),
        "files": st.lists(
            shaped(
                {"id": st.just("F1"), "url_private": st.just("https://files.slack.com/x")},
                {"size": st.integers(), "name": st.text(max_size=10), "mimetype": st.text()},
            ),
            max_size=3,
        ),
    },
)
presses = shaped(
    {
        "user": shaped({"id": users}),
        "container": shaped({"channel_id": st.just("D0DM"), "message_ts": st.just("1.2")}),
        "actions": st.lists(
            shaped({"action_id": st.just("thalos_approve"), "value": st.text(max_size=8)}),
            max_size=2,
        ),
    },
    {"message": shaped({"thread_ts": st.just("1.1")})},
)


@settings(max_examples=examples(500), deadline=None, database=None)
@given(events)
def test_any_event_is_judged_without_raising(event: Any) -> None:
    admission = Admission(CONFIG, Ledger(None), BOT)
    if not isinstance(event, dict):
        return  # bolt hands listeners a dict: the envelope's event object
    admitted = admission.judge(event)
    if admitted is not None:
        assert isinstance(admitted, Admitted)
        assert admitted.user == OWNER


async def _post(*_: Any) -> str:
    return "1.3"


@settings(max_examples=examples(500), deadline=None, database=None)
@given(presses)
def test_any_button_press_is_answered_or_ignored_without_raising(body: Any) -> None:
    seats = Seats("slack", People(), SecurityContext.of("owner"), OWNER)
    approvals = SlackApprovals(seats, _post)  # type: ignore[arg-type]
    if isinstance(body, dict):
        approvals.on_action(body)


def test_press_shapes_found_by_the_fuzzer() -> None:
    seats = Seats("slack", People(), SecurityContext.of("owner"), OWNER)
    approvals = SlackApprovals(seats, _post)  # type: ignore[arg-type]
    bodies: list[dict[str, Any]] = [
        {"user": "U0OWNER"},
        {"actions": "x"},
        {"actions": [5]},
        {"container": []},
    ]
    for body in bodies:
        approvals.on_action(body)
