"""The check of a send in doubt, against a model of a private chat's ids: for every way
the user's messages can fall around the bot's, whether it arrived or not, and with the
probes failing in transit, it finds the message if and only if it arrived, and never
probes at or below the floor."""

from __future__ import annotations

import itertools

import pytest

from thalos_bot_telegram.errors import Failure
from thalos_bot_telegram.render import Send, View
from thalos_bot_telegram.uncertain import MAX_PROBES, InDoubt, TextFields, Verdict

FLOOR = 7
"""The highest id known when the send was made (the user's question, say)."""
TRANSIENT = (None, Failure.MAYBE_SENT, Failure.NOT_SENT, Failure.RETRY_AFTER)


def in_doubt() -> InDoubt:
    view = View("answer", "the answer", closed=True)
    step = view.next_step("off")
    assert isinstance(step, Send)
    fields: TextFields = {"text": "the answer"}
    return InDoubt(view, step, fields, FLOOR)


def chat_after_floor(before: int, *, arrived: bool, after: int) -> dict[int, str]:
    """Who owns each id above the floor: the user's messages written meanwhile, and the
    bot's message if it arrived (ids are shared and sequential)."""
    owners = ["user"] * before + (["bot"] if arrived else []) + ["user"] * after
    return {FLOOR + 1 + offset: owner for offset, owner in enumerate(owners)}


def answer(chat: dict[int, str], message_id: int) -> Failure | None:
    """What editMessageText with the identical text answers."""
    owner = chat.get(message_id)
    if owner is None:
        return Failure.GONE  # "message to edit not found"
    if owner == "user":
        return Failure.NOT_EDITABLE  # "message can't be edited"
    return Failure.NOT_MODIFIED  # "message is not modified: ..."


@pytest.mark.parametrize(
    ("before", "arrived", "after", "transient", "at_probe"),
    list(itertools.product(range(4), [True, False], range(3), TRANSIENT, range(3))),
)
def test_the_check_finds_the_message_exactly_when_it_arrived(
    before: int, after: int, transient: Failure | None, at_probe: int, *, arrived: bool
) -> None:
    chat = chat_after_floor(before, arrived=arrived, after=after)
    doubt = in_doubt()
    probed: list[int] = []
    verdict = Verdict.NEXT
    while verdict in {Verdict.NEXT, Verdict.AGAIN}:
        probed.append(doubt.candidate)
        if transient is not None and len(probed) == at_probe + 1:
            verdict = doubt.judge(transient)  # this probe was lost, or met a 429
            assert verdict is Verdict.AGAIN
            continue
        verdict = doubt.judge(answer(chat, doubt.candidate))
    assert min(probed) > FLOOR
    if arrived:
        assert verdict is Verdict.ARRIVED
        assert chat[doubt.candidate] == "bot"
    else:
        assert verdict is Verdict.MISSING, "only then is it sent again"
    # Each of the user's messages on the way costs one probe (when the message did not
    # arrive, those written after it was sent are on the way too).
    assert len(set(probed)) == before + 1 + (0 if arrived else after)


def test_the_check_gives_up_past_too_many_of_the_users_messages() -> None:
    chat = chat_after_floor(MAX_PROBES + 5, arrived=True, after=0)
    doubt = in_doubt()
    probed = []
    verdict = Verdict.NEXT
    while verdict is Verdict.NEXT:
        probed.append(doubt.candidate)
        verdict = doubt.judge(answer(chat, doubt.candidate))
    assert verdict is Verdict.GAVE_UP
    assert len(probed) == MAX_PROBES


def test_an_edit_that_went_through_is_taken_as_the_message() -> None:
    doubt = in_doubt()
    assert doubt.judge(None) is Verdict.ARRIVED
    assert doubt.candidate == FLOOR + 1
