"""Fuzzing the Matrix event readers with what ``/sync`` might carry: every reader
answers (a text, None, False) for any JSON, never raises."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.channels.fuzz_json import json_values, shaped
from tests.hypothesis_budget import examples
from thalos_bot_matrix import events

ME = "@thalos:example.org"
contents = shaped(
    {"msgtype": st.sampled_from(["m.text", "m.emote", "m.image"]), "body": st.text(max_size=40)},
    {
        "m.relates_to": shaped(
            {"rel_type": st.sampled_from(["m.replace", "m.annotation", "m.thread"])},
            {
                "event_id": st.just("$e"),
                "key": st.text(max_size=4),
                "m.in_reply_to": shaped({"event_id": st.just("$r")}),
            },
        ),
        "m.new_content": shaped({"body": st.text(max_size=20)}),
        "m.mentions": shaped({"user_ids": st.lists(st.just(ME)), "room": st.booleans()}),
        "formatted_body": st.text(max_size=40).map(
            lambda t: f'<a href="https://matrix.to/#/{ME}">x</a>{t}'
        ),
        "format": st.just("org.matrix.custom.html"),
    },
)
room_events = shaped({"type": st.just("m.room.message"), "content": contents})
invites = shaped(
    {
        "invite_state": shaped(
            {
                "events": st.lists(
                    shaped(
                        {
                            "type": st.just("m.room.member"),
                            "state_key": st.just(ME),
                            "sender": st.just("@a:b"),
                            "content": json_values,
                        }
                    )
                )
            }
        )
    }
)


@settings(max_examples=examples(500), deadline=None, database=None)
@given(room_events, st.text(max_size=20) | st.none())
def test_every_reader_answers_for_any_event(event: Any, displayname: str | None) -> None:
    if not isinstance(event, dict):
        return  # the sync loop passes on only objects (events_in)
    content = events.content_of(event)
    assert isinstance(events.latest_body(event), str)
    assert isinstance(events.text_field(content, "body"), str)
    assert isinstance(events.relation(content), dict)
    target = events.reply_target(content)
    assert target is None or isinstance(target, str)
    assert events.reaction(content) is None or isinstance(events.reaction(content), tuple)
    assert isinstance(events.mentions(content, ME, displayname), bool)
    body = events.text_field(content, "body")
    assert isinstance(events.strip_reply_fallback(body), str)
    assert isinstance(events.without_mention(body, ME, displayname), str)


@settings(max_examples=examples(300), deadline=None, database=None)
@given(invites)
def test_an_invite_of_any_shape_is_read_without_raising(room: Any) -> None:
    if isinstance(room, dict):
        sender, _, _ = events.invite_sender(room, ME)
        assert sender is None or isinstance(sender, str)
