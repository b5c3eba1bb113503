"""The check of a send in doubt, against a model of the bot account's one counter: for
every way other chats' messages (heard of before the doubt, later, or only when the
updates are fetched; some deleted since: their updates came all the same), the user's,
and later messages and sends fall around the bot's, whether it arrived or not, with
probes failing in transit, and with two sends in doubt at once, it finds the message if
and only if it arrived, and never probes at or below the floor. A supergroup's own
counter follows the per-chat rule."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hypothesis_budget import examples
from thalos_bot.channels.delivery.failure import Failure
from thalos_bot.channels.delivery.view import Send, View
from thalos_bot_telegram.counter import Counter, Pending
from thalos_bot_telegram.uncertain import MAX_PROBES, InDoubt, Plan, TextFields, Verdict

FLOOR = 10
"""The highest id known in the counter when the sends began."""
A, B, C = 1, 2, 3
"""Private chats: A's send (and B's, when two are in doubt) is checked."""
TRANSIENT = (Failure.MAYBE_SENT, Failure.NOT_SENT, Failure.RETRY_AFTER)


@dataclass(frozen=True)
class Message:
    chat: int
    kind: str  # "user", "deleted" (a user's, deleted), "bot" (a send of the bot's), "doubt"
    heard: str = "before"  # "before" the doubt, at "catch_up", or at step N ("step")
    step: int = 0


@dataclass
class World:
    """Who holds each id, as Telegram knows it."""

    ids: dict[int, Message] = field(default_factory=dict)
    last: int = FLOOR

    def take(self, message: Message) -> int:
        self.last += 1
        self.ids[self.last] = message
        return self.last

    def answer(self, chat: int, message_id: int) -> Failure | None:
        """What editMessageText with the doubtful send's identical text answers."""
        held = self.ids.get(message_id)
        if held is None or held.kind == "deleted" or held.chat != chat:
            return Failure.GONE  # "message to edit not found"
        if held.kind == "user":
            return Failure.NOT_EDITABLE  # "message can't be edited"
        assert held.kind == "doubt", "a probe never meets another message of the bot's"
        return Failure.NOT_MODIFIED


def check_for(counter: Counter, pending: Pending, floor: int = FLOOR) -> InDoubt:
    view = View("answer", "the answer", closed=True)
    step = view.next_step("off")
    assert isinstance(step, Send)
    fields: TextFields = {"text": "the answer"}
    return InDoubt(view, step, fields, floor, counter, pending)


class Run:
    """The checks, the world and the counter, stepped together."""

    def __init__(self, world: World, counter: Counter, later: list[Message]) -> None:
        self.world = world
        self.counter = counter
        self.later = sorted(later, key=lambda m: m.step)
        self.unheard: list[tuple[int, Message]] = [
            (i, m)
            for i, m in world.ids.items()
            if m.kind in {"user", "deleted"} and m.heard != "before"
        ]
        self.step = 0

    def tick(self) -> None:
        """Time passes: later messages are posted (and sent), some heard of."""
        while self.later and self.later[0].step <= self.step:
            message = self.later.pop(0)
            if message.kind == "bot":
                pending = self.counter.begin(message.chat)
                self.counter.sent(pending, self.world.take(message))
            else:
                self.unheard.append((self.world.take(message), message))
        for pair in [p for p in self.unheard if p[1].heard == "step" and p[1].step <= self.step]:
            self.unheard.remove(pair)
            self.counter.heard(pair[1].chat, pair[0])
        self.step += 1

    def catch_up(self) -> None:
        """getUpdates: every update Telegram holds is heard of."""
        for message_id, message in sorted(self.unheard):
            self.counter.heard(message.chat, message_id)
        self.unheard.clear()

    def act(self, check: InDoubt, lost: bool = False) -> Plan | Verdict:
        """One step of the check: what it planned, or what its probe answered."""
        plan = check.plan()
        if plan is Plan.CATCH_UP:
            self.catch_up()
            check.caught_up(fetched=True)
            return plan
        if plan is not Plan.PROBE:
            return plan
        assert check.candidate > FLOOR, "never at or below the floor"
        if lost:
            return check.judge(Failure.MAYBE_SENT)
        return check.judge(self.world.answer(check.chat_id, check.candidate))


ids_before = st.lists(
    st.builds(
        Message,
        st.sampled_from([A, B, C]),
        st.sampled_from(["user", "user", "deleted"]),
        st.sampled_from(["before", "catch_up", "step"]),
        st.integers(0, 6),
    ),
    max_size=5,
)
ids_after = st.lists(
    st.builds(
        Message,
        st.sampled_from([B, C]),
        st.sampled_from(["user", "bot"]),
        st.just("step"),
        st.integers(0, 8),
    ),
    max_size=4,
)


def posted(world: World, before: list[Message], counter: Counter) -> None:
    for message in before:
        message_id = world.take(message)
        if message.kind in {"user", "deleted"} and message.heard == "before":
            counter.heard(message.chat, message_id)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=ids_before,
    after=ids_after,
    arrived=st.booleans(),
    lost=st.sets(st.integers(0, 10), max_size=3),
)
def test_one_send_in_doubt_is_found_exactly_when_it_arrived(
    before: list[Message], after: list[Message], lost: set[int], *, arrived: bool
) -> None:
    world, counter = World(), Counter(shared=True, bound=FLOOR)
    pending = counter.begin(A)
    posted(world, before, counter)
    mine = world.take(Message(A, "doubt")) if arrived else None
    counter.doubt(pending)
    run, check = Run(world, counter, after), check_for(counter, pending)
    outcome: Plan | Verdict = Plan.PROBE
    for turn in range(200):
        run.tick()
        outcome = run.act(check, lost=turn in lost)
        assert outcome is not Plan.WAIT, "no other send can hold an id below it"
        if outcome in {Verdict.ARRIVED, Verdict.MISSING, Plan.MISSING, Plan.GAVE_UP}:
            break
    if arrived:
        assert outcome is Verdict.ARRIVED
        assert check.candidate == mine
    else:
        assert outcome in {Verdict.MISSING, Plan.MISSING}, "only then is it sent again"


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=ids_before,
    after=ids_after,
    arrived=st.tuples(st.booleans(), st.booleans()),
    a_first=st.booleans(),
    turns=st.lists(st.booleans(), min_size=60, max_size=60),
)
def test_two_sends_in_doubt_at_once_are_each_found_exactly_when_they_arrived(
    before: list[Message],
    after: list[Message],
    arrived: tuple[bool, bool],
    turns: list[bool],
    *,
    a_first: bool,
) -> None:
    # A's and B's sends were both under way; either may have taken the lower id, and
    # each answers "not found" in the other's chat.
    world, counter = World(), Counter(shared=True, bound=FLOOR)
    pendings = {A: counter.begin(A), B: counter.begin(B)}
    posted(world, before, counter)
    held: dict[int, int | None] = {}
    for chat in (A, B) if a_first else (B, A):
        came = arrived[0] if chat == A else arrived[1]
        held[chat] = world.take(Message(chat, "doubt")) if came else None
    for pending in pendings.values():
        counter.doubt(pending)
    run = Run(world, counter, after)
    checks = {chat: check_for(counter, pending) for chat, pending in pendings.items()}
    outcomes: dict[int, Plan | Verdict] = {}
    for turn in range(400):
        run.tick()
        open_chats = [chat for chat in (A, B) if chat not in outcomes]
        if not open_chats:
            break
        chat = open_chats[0] if turns[turn % len(turns)] else open_chats[-1]
        outcome = run.act(checks[chat])
        if outcome is Plan.WAIT:
            other = [c for c in open_chats if c != chat]
            assert other, "a check waits only for another send"
            outcome = run.act(checks[other[0]])
            assert outcome is not Plan.WAIT, "two checks never wait for each other"
            chat = other[0]
        if outcome in {Verdict.ARRIVED, Verdict.MISSING, Plan.MISSING, Plan.GAVE_UP}:
            outcomes[chat] = outcome
            pending = pendings[chat]
            if outcome is Verdict.ARRIVED:
                counter.sent(pending, checks[chat].candidate)
            else:
                counter.not_sent(pending)
    for chat in (A, B):
        if held[chat] is not None:
            assert outcomes[chat] is Verdict.ARRIVED, chat
            assert checks[chat].candidate == held[chat]
        else:
            assert outcomes[chat] in {Verdict.MISSING, Plan.MISSING}, chat


@pytest.mark.parametrize("arrived", [True, False])
@pytest.mark.parametrize("members", range(3))
def test_a_supergroup_counts_for_itself(members: int, *, arrived: bool) -> None:
    # Its own counter: members' messages sent meanwhile exist there ("can't be edited"),
    # and "not found" above the bound is an absence (no other chat draws from it).
    group = -1001234567890
    world, counter = World(), Counter(shared=False, bound=FLOOR)
    pending = counter.begin(group)
    for _ in range(members):
        world.take(Message(group, "user"))
    mine = world.take(Message(group, "doubt")) if arrived else None
    counter.doubt(pending)
    run, check = Run(world, counter, []), check_for(counter, pending)
    outcomes = [run.act(check) for _ in range(members + 1)]
    assert Plan.CATCH_UP not in outcomes, "no other chat's update to wait for"
    assert outcomes[-1] is (Verdict.ARRIVED if arrived else Verdict.MISSING)
    assert check.candidate == (mine if arrived else FLOOR + members + 1)


def test_a_deleted_message_below_the_bound_is_a_gap() -> None:
    world, counter = World(), Counter(shared=False, bound=FLOOR)
    pending = counter.begin(-100)
    world.take(Message(-100, "deleted"))
    counter.saw(-100, world.take(Message(-100, "user")))  # heard of: the bound is above
    mine = world.take(Message(-100, "doubt"))
    counter.doubt(pending)
    run, check = Run(world, counter, []), check_for(counter, pending)
    assert [run.act(check) for _ in range(3)] == [Verdict.NEXT, Verdict.NEXT, Verdict.ARRIVED]
    assert check.candidate == mine


def test_ids_known_to_be_other_chats_are_not_probed() -> None:
    world, counter = World(), Counter(shared=True, bound=FLOOR)
    pending = counter.begin(A)
    for chat in (B, C, B):
        counter.heard(chat, world.take(Message(chat, "user")))
    mine = world.take(Message(A, "doubt"))
    counter.doubt(pending)
    run, check = Run(world, counter, []), check_for(counter, pending)
    assert run.act(check) is Plan.CATCH_UP
    assert run.act(check) is Verdict.ARRIVED
    assert (check.candidate, check.probes) == (mine, 1)


def test_the_check_gives_up_past_too_many_unknown_ids() -> None:
    world, counter = World(), Counter(shared=True, bound=FLOOR + MAX_PROBES + 5)
    pending = counter.begin(A)
    counter.doubt(pending)
    run, check = Run(world, counter, []), check_for(counter, pending)
    outcomes = [run.act(check) for _ in range(MAX_PROBES + 1)]
    assert outcomes == [Verdict.NEXT] * MAX_PROBES + [Plan.GAVE_UP]


def test_when_the_updates_cannot_be_fetched_the_check_gives_up() -> None:
    counter = Counter(shared=True, bound=FLOOR)
    pending = counter.begin(A)
    counter.doubt(pending)
    check = check_for(counter, pending)
    assert check.plan() is Plan.CATCH_UP
    check.caught_up(fetched=False)
    assert check.plan() is Plan.GAVE_UP


def test_an_edit_that_went_through_is_taken_as_the_message() -> None:
    counter = Counter(shared=True, bound=FLOOR)
    pending = counter.begin(A)
    counter.doubt(pending)
    check = check_for(counter, pending)
    assert check.judge(None) is Verdict.ARRIVED
    assert check.candidate == FLOOR + 1


@pytest.mark.parametrize("failure", TRANSIENT)
def test_a_probe_lost_in_transit_is_made_again(failure: Failure) -> None:
    counter = Counter(shared=True, bound=FLOOR + 1)
    pending = counter.begin(A)
    counter.doubt(pending)
    check = check_for(counter, pending)
    assert check.judge(failure) is Verdict.AGAIN
    assert (check.candidate, check.probes) == (FLOOR + 1, 0)
