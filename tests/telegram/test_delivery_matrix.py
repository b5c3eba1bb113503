"""The fault matrix: each network fault Telegram can throw at the first sendMessage of an
answer, in each streaming mode, against the real python-telegram-bot over real sockets.

The first sendMessage is the final answer with ``streaming = "off"`` and ``"draft"``, and
the first live message with ``"edit"``. Whatever the fault, the answer must arrive
exactly once (nothing lost, nothing shown twice), and nothing may reach the chat while
a retry_after runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from structlog.testing import capture_logs

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER, running_bot
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider

pytestmark = pytest.mark.anyio

ANSWER = (
    "Exactly once, whatever the network does: not lost after a 5xx or a dropped "
    "connection, and not shown twice after a send that arrived but was never confirmed."
)
MEANWHILE = "are you there?"
REFUSAL = 0.4
"""Seconds the fake refuses connections in the "connection refused" case."""


@dataclass(frozen=True)
class Fault:
    name: str
    arm: Callable[[TelegramFake], None]
    """Queues the fault for the answer's first sendMessage."""
    user_says: bool = False
    """The user writes while the send is in doubt (their message takes the next id)."""
    refuse: bool = False
    """Connections are refused when the answer's first message is due instead."""


def _nothing(fake: TelegramFake) -> None:
    """The fault comes from the provider's script (connections refused)."""


def _server_error(code: int, *, applied: bool = False) -> Fault:
    name = f"{code} (applied)" if applied else str(code)
    return Fault(name, lambda fake: fake.fail_next("sendMessage", code, applied=applied))


FAULTS = [
    Fault("429 three times", lambda f: f.fail_next("sendMessage", 429, retry_after=1, times=3)),
    _server_error(500),
    _server_error(502),
    _server_error(503),
    _server_error(504),
    _server_error(502, applied=True),
    Fault("connection refused", _nothing, refuse=True),
    Fault("dropped before it was read", lambda f: f.drop_next("sendMessage")),
    Fault("applied, then dropped", lambda f: f.timeout_next("sendMessage", close=True)),
    Fault("applied, then hung", lambda f: f.timeout_next("sendMessage")),
    Fault("timed out before the server answered", lambda f: f.stall_next("sendMessage")),
    Fault(
        "applied, then dropped, the user writing meanwhile",
        lambda f: f.timeout_next("sendMessage", close=True, user_says=MEANWHILE),
        user_says=True,
    ),
    Fault(
        "dropped, the user writing meanwhile",
        lambda f: f.drop_next("sendMessage", user_says=MEANWHILE),
        user_says=True,
    ),
]


def script(fake: TelegramFake, mode: str, fault: Fault) -> ScriptedProvider:
    chunks = [ANSWER[i : i + 12] for i in range(0, len(ANSWER), 12)]
    steps: list[Say | Await] = [Say(*chunks, delay=0.01)]
    if fault.refuse:

        async def refuse() -> None:
            fake.refuse_connections(REFUSAL)

        # The first message is due at the first flush (edit) or at the end (draft, off).
        steps.insert(0 if mode == "edit" else 1, Await(refuse))
    return ScriptedProvider([steps])


def fragments_of_answer(texts: list[str]) -> list[str]:
    """Messages that show (part of) the answer."""
    return [text for text in texts if text and ANSWER.startswith(text)]


@pytest.mark.parametrize("mode", ["draft", "edit", "off"])
@pytest.mark.parametrize("fault", FAULTS, ids=[fault.name for fault in FAULTS])
async def test_the_answer_arrives_exactly_once(fake: TelegramFake, fault: Fault, mode: str) -> None:
    fault.arm(fake)
    with capture_logs() as logs:
        async with running_bot(
            fake, script(fake, mode, fault), streaming=mode, request_timeout=0.3
        ) as bot:
            bot.say("hello")
            wanted = 2 if fault.user_says else 1  # the user's second message gets a reply
            await fake.wait_for(
                lambda: ANSWER in fake.texts(USER) and len(fake.texts(USER)) >= wanted, 15
            )
        # Leaving the block drains every chat: a late duplicate would be here by now.
    texts = fake.texts(USER)
    assert fragments_of_answer(texts) == [ANSWER], "the answer, whole, exactly once"
    assert len(texts) == wanted
    assert fake.retry_after_violations == [], "nothing was sent before retry_after"
    if mode != "edit":
        assert not any(m.history for m in fake.messages(USER)), "no check rewrote a message"
    if fault.refuse:
        refused = [e for e in logs if e.get("failure") == "not_sent"]
        assert refused, "the bot met the refused connection"
    else:
        assert any(call.fault or call.status != 200 for call in fake.calls("sendMessage"))
    if fault.user_says:
        users = [m for m in fake.messages(USER, include_incoming=True) if not m.from_bot]
        assert [m.text for m in users] == ["hello", MEANWHILE], "the user's words untouched"
