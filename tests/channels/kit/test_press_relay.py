"""Approval presses relayed among replicas (:mod:`thalos_bot.channels.approvals.relay`):
the kit decides local vs relayed; a relayed press is applied only by the ``Asking``
that asked, with its own seats."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import pytest
from structlog.testing import capture_logs

from thalos_bot.channels.approvals.asking import CLOSED, OUTCOMES, RELAYED, Asking
from thalos_bot.channels.approvals.relay import Press, Presses, PressLine, chat_key
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.people import People
from thalos_bot.domain.security import SecurityContext
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest

pytestmark = pytest.mark.anyio

OWNER, OTHER, STRANGER = "U1", "U2", "U9"


@dataclass(frozen=True, slots=True)
class Chat:
    channel: str
    thread: int | None = None


def seats() -> Seats:
    return Seats("test", People(), SecurityContext.of("owner"), OWNER, allowed=(OWNER, OTHER))


def asking(posted: list[QuestionView[None] | OutcomeView[None]]) -> Asking[Chat, None]:
    return Asking[Chat, None](lambda chat, view: posted.append(view), "test", seats())


def test_a_press_survives_its_trip_and_a_chat_keys_the_same_on_every_replica() -> None:
    press = Press("tok", chat_key(Chat("D1", 5)), "40", "approved-session", OWNER, "<@U1>")
    assert Press.decode(press.encode()) == press
    assert chat_key(Chat("D1", 5)) == chat_key(Chat("D1", 5)) != chat_key(Chat("D1"))
    for bad in ("", "[]", '{"token": 1}', press.encode().replace("approved-session", "yes")):
        assert Press.decode(bad) is None


async def test_a_press_for_a_question_asked_elsewhere_is_relayed_and_decides_it_there() -> None:
    """The owner's side (no question) relays; the asking side applies it; the others,
    and presses with no open question, change nothing."""
    presses = Presses("test")
    relayed: list[str] = []
    presses.send = lambda press: relayed.append(press.encode())
    there: list[QuestionView[None] | OutcomeView[None]] = []
    owner_side, asking_side, idle_side = asking([]), asking(there), asking([])
    owner_side.presses = presses
    for side in (asking_side, idle_side):
        presses.join(side.relayed)
    request = ApprovalRequest("fs__write_file", {}, SessionId("s1"), caller="owner")
    token, chat = Asking.token(), Chat("D1")
    view: QuestionView[None] = QuestionView("Allow?", None)
    answers: list[ApprovalAnswer] = []

    async def ask() -> None:
        answers.append(await asking_side.ask(chat, request, token, view))

    def press(user: str, message: str = "40", at: Chat = chat) -> str | None:
        said = owner_side.answer(token, at, message, "approved", user=user, who=f"<@{user}>")
        for payload in relayed:
            presses.heard(payload)
        relayed.clear()
        return said

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        view.shown("40")
        assert press(STRANGER) is None, "refused where it arrived: not relayed"
        assert press(OTHER) == RELAYED  # relayed, refused by the asking side's seats
        assert press(OWNER, at=Chat("D2")) == RELAYED  # another chat's press
        assert press(OWNER, message="41") == RELAYED  # another message's
        assert not answers, "nothing changed"
        assert len(there) == 1, "the question only"
        assert press(OWNER) == RELAYED
    [answer] = answers
    assert (answer.verdict, answer.decided_by) == ("approved", f"test:{OWNER}")
    closing = there[-1]
    assert isinstance(closing, OutcomeView)
    assert closing.html == f"Allow?\n{OUTCOMES['approved']} by <@{OWNER}>."
    assert press(OWNER) == RELAYED, "a late press is relayed too, and changes nothing"
    assert len(there) == 2


async def test_without_replicas_a_press_for_no_question_is_closed() -> None:
    side = asking([])
    said = side.answer(Asking.token(), Chat("D1"), "40", "approved", user=OWNER, who="Ann")
    assert said == CLOSED
    presses = Presses("test")  # no replica to tell yet
    side.presses = presses
    assert side.answer("t", Chat("D1"), "40", "denied", user=OWNER, who="Ann") == CLOSED


class Store:
    """Where relayed presses are written: refuses every write while ``down``."""

    def __init__(self) -> None:
        self.down = True
        self.written: list[str] = []
        self.refused = 0
        self.now = 0.0
        """The line's clock (seconds): moved by the test alone."""

    async def write(self, press: Press) -> bool:
        await anyio.sleep(0)
        if self.down:
            self.refused += 1
            return False
        self.written.append(press.token)
        return True


def pressed(token: str) -> Press:
    return Press(token, chat_key(Chat("D1")), "40", "approved", OWNER, "Ann")


async def test_presses_the_store_refused_are_written_in_order_once_it_is_back() -> None:
    store = Store()
    line = PressLine(store.write, "test", within=120, retry_every=0, clock=lambda: store.now)
    async with anyio.create_task_group() as group:
        group.start_soon(line.run)
        for token in ("t1", "t2", "t3"):
            line.put(pressed(token))
        while store.refused < 3:
            await anyio.sleep(0)
        assert store.written == []
        assert len(line) == 3, "kept while the store is down"
        store.down = False
        with anyio.fail_after(5):
            await line.flush()
        group.cancel_scope.cancel()
    assert store.written == ["t1", "t2", "t3"], "each once, in the order pressed"


async def test_a_press_is_dropped_logged_only_once_no_question_can_be_open_for_it() -> None:
    """Past the approval timeout from the press, its question has closed as not
    answered in time (the chat shows it): the next press is written then."""
    store = Store()
    line = PressLine(store.write, "test", within=120, retry_every=0, clock=lambda: store.now)
    with capture_logs() as logs:
        async with anyio.create_task_group() as group:
            group.start_soon(line.run)
            line.put(pressed("t1"))
            store.now = 100.0
            line.put(pressed("t2"))
            while store.refused < 5:
                await anyio.sleep(0)
            assert len(line) == 2, "not dropped before the timeout"
            store.now = 120.0  # t1's question has closed by now, t2's may be open
            while len(line) == 2:
                await anyio.sleep(0)
            refused = store.refused
            while store.refused == refused:  # t2 refused once more, on its own now
                await anyio.sleep(0)
            store.down = False
            with anyio.fail_after(5):
                await line.flush()
            group.cancel_scope.cancel()
    assert store.written == ["t2"]
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["approval_press_dropped"]
    assert [e["event"] for e in logs if e["event"].startswith("approval_press_relayed")] == [
        "approval_press_relayed_late"
    ]
