"""Approvals among people: only the person whose turn asked, or a person holding the
approver role, answers the question; a stranger never does."""

from __future__ import annotations

import anyio
import pytest

from thalos_bot.channels.approvals.asking import CLOSED, OUTCOMES, Asking
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.people import People, Person
from thalos_bot.domain.security import SecurityContext
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest

pytestmark = pytest.mark.anyio

PEOPLE = People(
    [
        Person("ana", "Ana", (), (("chat", "1"),)),
        Person("ben", "Ben", (), (("chat", "2"),)),
        Person("cleo", "Cleo", ("approver",), (("chat", "3"),)),
    ]
)
SEATS = Seats("chat", PEOPLE, SecurityContext.of("owner"), "1", allowed=("1", "2", "3"))


async def asked_by(caller: str, users: list[str]) -> tuple[list[str | None], list[ApprovalAnswer]]:
    """Ask a question in ``caller``'s turn, answered by each of ``users`` in order;
    what each was told, and how the question ended."""
    posted: list[QuestionView[None] | OutcomeView[None]] = []
    asking = Asking[int, None](lambda chat, view: posted.append(view), "chat", SEATS)
    request = ApprovalRequest("fs__write_file", {}, SessionId("s1"), caller)
    token = Asking.token()
    view: QuestionView[None] = QuestionView("Allow?", None)
    told: list[str | None] = []
    ended: list[ApprovalAnswer] = []

    async def ask() -> None:
        ended.append(await asking.ask(7, request, token, view))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        view.shown("40")
        told.extend(asking.answer(token, 7, "40", "approved", user=u, who=u) for u in users)
        await anyio.wait_all_tasks_blocked()
        if not ended:
            group.cancel_scope.cancel()
    return told, ended


async def test_another_person_cannot_answer_but_the_asker_can() -> None:
    told, ended = await asked_by("ana", ["2", "9", "1"])
    assert told == [None, None, OUTCOMES["approved"]]  # Ben, a stranger, then Ana
    [answer] = ended
    assert (answer.verdict, answer.decided_by) == ("approved", "chat:1")


async def test_an_approver_answers_anyones_question() -> None:
    told, ended = await asked_by("ben", ["3", "2"])
    assert told == [OUTCOMES["approved"], CLOSED]  # Cleo decided; Ben's is late
    assert ended[0].decided_by == "chat:3"
