"""What waits for a room key is bounded: by count (the oldest forgotten first) and by
age; a session is asked for once however many events wait on it; an event is handed
back once."""

from __future__ import annotations

from tests.matrix.human import JSON
from thalos_bot_matrix.key_asks import KeyAsks


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _event(number: int, session: str) -> JSON:
    return {
        "event_id": f"$e{number}",
        "sender": "@alice:test",
        "type": "m.room.encrypted",
        "content": {"session_id": session, "sender_key": "curve-a", "ciphertext": "x"},
    }


def test_one_request_per_session_and_each_event_handed_back_once() -> None:
    asks = KeyAsks(clock=Clock())
    first = asks.remember("!r", _event(1, "s1"))
    assert first is not None
    assert first.sender == "@alice:test"
    assert first.sender_key == "curve-a"
    assert asks.remember("!r", _event(2, "s1")) is None  # the same session: asked already
    assert asks.remember("!r", _event(1, "s1")) is None  # the same event again
    assert asks.remember("!r", _event(3, "s2")) is not None
    events, answered = asks.ready({"!r|s1": object()})
    assert [e["event_id"] for _, e in events] == ["$e1", "$e2"]
    assert answered == [first.request_id]
    assert asks.ready({"!r|s1": object()}) == ([], [])
    assert list(asks.waiting) == ["$e3"]


def test_the_oldest_is_forgotten_past_the_count() -> None:
    asks = KeyAsks(max_waiting=3, clock=Clock())
    for number in range(1, 5):
        asks.remember("!r", _event(number, f"s{number}"))
    assert list(asks.waiting) == ["$e2", "$e3", "$e4"]
    assert set(asks.asked) == {"!r|s2", "!r|s3", "!r|s4"}  # s1's request forgotten too
    events, _ = asks.ready({"!r|s1": object()})
    assert events == []


def test_what_waited_too_long_is_forgotten() -> None:
    clock = Clock()
    asks = KeyAsks(max_age=60.0, clock=clock)
    asks.remember("!r", _event(1, "s1"))
    clock.now += 30
    asks.remember("!r", _event(2, "s2"))
    clock.now += 31  # the first is 61 s old, the second 31 s
    events, _ = asks.ready({"!r|s1": object(), "!r|s2": object()})
    assert [e["event_id"] for _, e in events] == ["$e2"]
    assert asks.asked == {}


def test_an_event_that_names_no_session_is_not_kept() -> None:
    asks = KeyAsks(clock=Clock())
    assert asks.remember("!r", {"event_id": "$x", "sender": "@a:test", "content": {}}) is None
    assert not asks.waiting
