"""The kit's pieces a second transport meets that Telegram does not exercise: a dialect
that lets code sit inside emphasis, allowlists by other keys, mention rules, a group
outbox that quotes, approval answers decoded from something other than a button."""

from __future__ import annotations

import re

import anyio
import pytest

from thalos_bot.channels.admission.allowlist import Allowlist
from thalos_bot.channels.admission.mentions import Addressing, addressed, strip_spans
from thalos_bot.channels.approvals.asking import OUTCOMES, Asking
from thalos_bot.channels.delivery.outbox import ChatOutbox
from thalos_bot.channels.delivery.question import OutcomeView, QuestionView
from thalos_bot.channels.delivery.view import View
from thalos_bot.channels.markdown.html import HtmlDialect
from thalos_bot.channels.markdown.render import Renderer
from thalos_bot.channels.pacing.gate import ChatGate
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import TurnStarted
from thalos_bot.domain.ids import SessionId
from thalos_bot.domain.people import People
from thalos_bot.domain.security import SecurityContext
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest

WEB = re.compile(r"^https?://\S+$")


def test_a_dialect_may_keep_code_inside_emphasis() -> None:
    nesting = Renderer(HtmlDialect(WEB, code_in_emphasis=True))
    strict = Renderer(HtmlDialect(WEB))
    assert nesting.render("**a `b` c**") == "<b>a <code>b</code> c</b>"
    assert strict.render("**a `b` c**") == "<b>a </b><code>b</code><b> c</b>"


def test_a_dialect_opens_only_its_own_link_schemes() -> None:
    renderer = Renderer(HtmlDialect(WEB))
    assert renderer.render("[x](https://e.org) [y](tg://resolve)") == (
        '<a href="https://e.org">x</a> y'
    )


def test_an_allowlist_by_user_ids_of_another_platform() -> None:
    allowed = Allowlist(frozenset({"@ann:example.org"}), frozenset({"!room:example.org"}))
    assert allowed.user_refusal("@ann:example.org") is None
    assert allowed.user_refusal("@bob:example.org") == (
        "user @bob:example.org is not in allowed_users"
    )
    assert allowed.group_refusal("!other:example.org") == (
        "group !other:example.org is not in groups"
    )


def test_what_counts_as_addressed_and_what_is_stripped() -> None:
    assert addressed(Addressing(replies_to_bot=True), None)
    assert addressed(Addressing(mentions=[(0, 4)]), None)
    assert addressed(Addressing(command_for="Thalos_Bot"), "thalos_bot")
    assert not addressed(Addressing(command_for="other_bot"), "thalos_bot")
    assert not addressed(Addressing(command_for="thalos_bot"), None)
    assert not addressed(Addressing(), "thalos_bot")
    assert strip_spans("Hello @bot, how are you", [(6, 10)]) == "Hello, how are you"
    assert strip_spans("@bot what is 2+2?", [(0, 4)]) == "what is 2+2?"
    assert strip_spans("no mention", []) == "no mention"


def test_in_a_group_an_answer_quotes_the_message_it_answers() -> None:
    group = ChatOutbox[str, None]("room", ChatGate(1.0), private=False, caption_limit=100)
    private = ChatOutbox[str, None]("dm", ChatGate(1.0), private=True, caption_limit=100)
    for outbox in (group, private):
        outbox.apply(TurnStarted(answers="17"))
    [answer] = group.views
    [alone] = private.views
    assert isinstance(answer, View)
    assert answer.reply_to == "17"
    assert isinstance(alone, View)
    assert alone.reply_to is None


@pytest.mark.anyio
async def test_an_answer_decoded_from_a_reply_settles_the_question_once() -> None:
    posted: list[QuestionView[None] | OutcomeView[None]] = []
    seats = Seats("test", People(), SecurityContext.of("owner"), None)
    asking = Asking[int, None](lambda chat, view: posted.append(view), "test", seats)
    request = ApprovalRequest("fs__write_file", {}, SessionId("s1"))
    token = Asking.token()
    view: QuestionView[None] = QuestionView("Allow?", None)
    answers: list[ApprovalAnswer] = []

    async def ask() -> None:
        answers.append(await asking.ask(7, request, token, view))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        assert asking.shown_as(token) == ""  # not out yet
        view.shown("40")
        assert asking.shown_as(token) == "40"
        assert asking.decide(token, 8, "40", "approved", who="Ann", decider="x:1") is None
        assert asking.decide(token, 7, "41", "approved", who="Ann", decider="x:1") is None
        outcome = asking.decide(token, 7, "40", "denied", who="Ann", decider="x:1")
        assert outcome == OUTCOMES["denied"]
    assert asking.decide(token, 7, "40", "approved", who="Ann", decider="x:1") is None
    assert asking.shown_as(token) == ""  # closed
    [answer] = answers
    assert (answer.verdict, answer.decided_by) == ("denied", "x:1")
    closing = posted[-1]
    assert isinstance(closing, OutcomeView)
    assert closing.html == f"Allow?\n{OUTCOMES['denied']} by Ann."
