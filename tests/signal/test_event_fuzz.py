"""Fuzzing what signal-cli hands us: envelopes of any shape (data messages, reactions,
receipts, our account's sync transcripts, mentions, quotes, attachments, groups) are
judged or ignored, never raised on past the receiver (a raise there would end the event
stream and drop what follows it)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.channels.fuzz_json import shaped
from tests.hypothesis_budget import examples
from thalos_bot_signal.inbound import Admitted, Reaction, Receipt, Rules

BOT, BOT_UUID = "+4915100000001", "0b1d6c52-6a5e-4c9f-9f0e-7f00000000b0"
OWNER, OWNER_UUID = "+4915100000002", "0b1d6c52-6a5e-4c9f-9f0e-7f0000000002"
GROUP = "Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg="
RULES = Rules(BOT, BOT_UUID, frozenset({OWNER}), frozenset({GROUP}), 200)

people = st.sampled_from([OWNER, BOT, "+4915100000099", OWNER_UUID, BOT_UUID])
stamps = st.integers(min_value=-(2**63), max_value=2**63)
mention = shaped(
    {"uuid": st.sampled_from([BOT_UUID, OWNER_UUID]), "number": people},
    {"start": st.integers(-5, 50), "length": st.integers(-5, 50), "name": st.text(max_size=8)},
)
data = shaped(
    {"timestamp": stamps, "message": st.text(max_size=60)},
    {
        "groupInfo": shaped(
            {"groupId": st.sampled_from([GROUP, "other"])},
            {"type": st.sampled_from(["DELIVER", "UPDATE"])},
        ),
        "mentions": st.lists(mention, max_size=3),
        "reaction": shaped(
            {"emoji": st.sampled_from(["✅", "🔁", "❌", "x"]), "targetSentTimestamp": stamps},
            {"isRemove": st.booleans(), "targetAuthor": people},
        ),
        "quote": shaped(
            {"id": stamps, "text": st.text(max_size=30)},
            {"authorNumber": people, "authorUuid": people, "author": people},
        ),
        "attachments": st.lists(
            shaped(
                {"id": st.text(max_size=12)},
                {
                    "contentType": st.sampled_from(["image/png", "audio/aac", "text/plain"]),
                    "filename": st.text(max_size=10),
                    "size": st.integers(),
                },
            ),
            max_size=3,
        ),
    },
)
from_owner = st.fixed_dictionaries(
    {
        "envelope": st.fixed_dictionaries(
            {"sourceNumber": st.just(OWNER), "dataMessage": data},
            optional={"sourceUuid": st.just(OWNER_UUID), "timestamp": stamps},
        )
    }
)
"""An allowed user's message of any shape (most of what reaches a turn)."""
any_event = shaped(
    {
        "envelope": shaped(
            {"sourceNumber": people},
            {
                "sourceUuid": people,
                "sourceName": st.text(max_size=10),
                "timestamp": stamps,
                "dataMessage": data,
                "receiptMessage": shaped({"timestamps": st.lists(stamps, max_size=3)}),
                "syncMessage": shaped({"sentMessage": data}),
            },
        )
    },
    {"account": st.just(BOT)},
)


@settings(max_examples=examples(2000), deadline=None, database=None)
@given(st.one_of(from_owner, any_event))
def test_any_event_is_judged_without_raising(event: Any) -> None:
    if not isinstance(event, dict):
        return  # the receiver only ever gets objects: rpc.events yields dicts
    try:
        read = RULES.read(event)
    except (TypeError, ValueError, KeyError, OverflowError, OSError):
        return  # a number out of range: the receiver's guard logs it, the stream goes on
    assert read is None or isinstance(read, Admitted | Reaction | Receipt)
    if isinstance(read, Admitted):
        assert read.user == OWNER, "only an allowed user's message is a turn"
        assert read.text.strip() or read.files
