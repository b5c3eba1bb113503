"""The timeline's resume rules: whatever point a stream dropped at, resuming from its last
id leaves the page as a fresh load would, and the final answer of a turn arrives once."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from thalos_bot_web.timeline import Event, Timeline


def add(timeline: Timeline, kind: str, data: dict[str, Any], turn: str | None = None) -> Event:
    """An event as the store numbers it (the next number), taken into ``timeline``."""
    assert timeline.take(timeline.last_serial + 1, kind, data, turn)
    return timeline.events()[-1]


class Page:
    """What app.js does with the events, reduced to what a person sees: a ``turn`` event
    places the answer's bubble, ``partial`` and ``final`` fill it."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []
        self.turns: dict[str, int] = {}
        self.finals: dict[str, int] = {}

    def apply(self, events: list[Event], reset: bool = False) -> None:
        if reset:
            self.items, self.turns, self.finals = [], {}, {}
        for event in events:
            if event.kind in {"turn", "partial", "final"}:
                turn = str(event.data["turn"])
                if turn not in self.turns:
                    self.turns[turn] = len(self.items)
                    self.items.append(("turn", ""))
                if event.kind != "turn":
                    self.items[self.turns[turn]] = ("turn", str(event.data["html"]))
                if event.kind == "final":
                    self.finals[turn] = self.finals.get(turn, 0) + 1
            else:
                self.items.append((event.kind, str(event.data.get("html", ""))))


Step = tuple[str, int]
steps = st.lists(
    st.tuples(st.sampled_from(["user", "start", "partial", "final", "notice"]), st.integers(0, 2)),
    max_size=40,
)


class Script:
    """Plays steps as the adapter would: a turn starts (once), streams, ends once."""

    def __init__(self) -> None:
        self.active: dict[int, tuple[str, str]] = {}
        self.count = 0

    def play(self, timeline: Timeline, script: list[Step]) -> None:
        for kind, lane in script:
            if kind == "start" and lane not in self.active:
                self.count += 1
                turn = f"t{self.count}"
                self.active[lane] = (turn, "")
                add(timeline, "turn", {"turn": turn})
            elif kind in {"partial", "final"} and lane in self.active:
                turn, text = self.active[lane]
                text += "x"
                self.active[lane] = (turn, text)
                add(timeline, kind, {"turn": turn, "html": text}, turn)
                if kind == "final":
                    del self.active[lane]
            elif kind in {"user", "notice"}:
                add(timeline, kind, {"html": f"{kind}{self.count}"})


def _subsequence(short: list[tuple[str, str]], long: list[tuple[str, str]]) -> bool:
    remaining = iter(long)
    return all(item in remaining for item in short)


@given(steps, steps, st.integers(10, 60))
def test_resuming_anywhere_shows_what_a_fresh_load_shows(
    before: list[Step], after: list[Step], keep: int
) -> None:
    timeline = Timeline(keep=keep)
    script = Script()
    script.play(timeline, before)
    resumed = Page()
    reset, seen = timeline.since(None)
    resumed.apply(seen, reset)
    cursor = seen[-1].id if seen else None
    script.play(timeline, after)  # while the stream was down
    reset, missed = timeline.since(cursor)
    resumed.apply(missed, reset)
    fresh = Page()
    reset, everything = timeline.since(None)
    fresh.apply(everything, reset)
    # A fresh load shows the kept events; a resumed page shows them in the same order,
    # with older ones between them too (what the bound let go since), and the same text
    # in every answer.
    assert _subsequence(fresh.items, resumed.items), (fresh.items, resumed.items)
    for turn, at in fresh.turns.items():
        assert resumed.items[resumed.turns[turn]] == fresh.items[at]
    assert all(count == 1 for count in fresh.finals.values())
    assert all(count <= 1 for count in resumed.finals.values())


def test_a_partial_replaces_the_one_before_and_the_final_drops_it() -> None:
    timeline = Timeline(keep=100)
    add(timeline, "user", {"html": "hi"})
    first = add(timeline, "partial", {"turn": "a", "html": "He"}, "a")
    add(timeline, "partial", {"turn": "a", "html": "Hello"}, "a")
    assert [e.data.get("html") for e in timeline.events()] == ["hi", "Hello"]
    add(timeline, "final", {"turn": "a", "html": "Hello!"}, "a")
    assert [e.kind for e in timeline.events()] == ["user", "final"]
    # A stream whose last event was the dropped partial gets only the final.
    reset, missed = timeline.since(first.id)
    assert not reset
    assert [(e.kind, e.data["html"]) for e in missed] == [("final", "Hello!")]


def test_an_unknown_or_trimmed_id_resets_the_page() -> None:
    timeline = Timeline(keep=3)
    events = [add(timeline, "notice", {"html": str(n)}) for n in range(5)]
    assert timeline.since("other-2")[0] is True
    assert timeline.since("s-99")[0] is True
    assert timeline.since(events[0].id) == (True, events[2:])
    assert timeline.since(events[3].id) == (False, events[4:])
    assert timeline.since(None) == (False, events[2:])
