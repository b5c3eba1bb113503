"""The fault matrix: each network fault Telegram can throw at the first sendMessage of an
answer, in each streaming mode, against the real python-telegram-bot over real sockets.

The first sendMessage is the final answer with ``streaming = "off"`` and ``"draft"``, and
the first live message with ``"edit"``. Whatever the fault, the answer must arrive
exactly once (nothing lost, nothing shown twice or in part), and nothing may reach the
chat while a retry_after runs. The faults are in tests/fakes/telegram_matrix.py;
``bench/telegram.py --faults`` runs the same matrix repeatedly.
"""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from tests.fakes.telegram_api import TelegramFake
from tests.fakes.telegram_matrix import MEANWHILE, MatrixFault, answer_steps, faults, showing
from tests.telegram.harness import USER, running_bot
from thalos_bot.providers.scripted import ScriptedProvider

pytestmark = pytest.mark.anyio

ANSWER = (
    "Exactly once, whatever the network does: not lost after a 5xx or a dropped "
    "connection, and not shown twice after a send that arrived but was never confirmed."
)
FAULTS = faults(times_429=2)


@pytest.mark.parametrize("mode", ["draft", "edit", "off"])
@pytest.mark.parametrize("fault", FAULTS, ids=[fault.name for fault in FAULTS])
async def test_the_answer_arrives_exactly_once(
    fake: TelegramFake, fault: MatrixFault, mode: str
) -> None:
    fault.arm(fake)
    provider = ScriptedProvider([answer_steps(fake, mode, fault, ANSWER)])
    wanted = 2 if fault.user_says else 1  # the user's second message gets a reply
    with capture_logs() as logs:
        async with running_bot(fake, provider, streaming=mode, request_timeout=0.3) as bot:
            bot.say("hello")
            await fake.wait_for(
                lambda: ANSWER in fake.texts(USER) and len(fake.texts(USER)) >= wanted, 15
            )
        # Leaving the block drains every chat: a late duplicate would be here by now.
    texts = fake.texts(USER)
    assert showing(texts, ANSWER) == (1, 0), "the answer, whole, exactly once"
    assert len(texts) == wanted
    assert fake.retry_after_violations == [], "nothing was sent before retry_after"
    if mode != "edit":
        assert not any(m.history for m in fake.messages(USER)), "no check rewrote a message"
    if fault.refuse:
        assert any(e.get("failure") == "not_sent" for e in logs), "connections were refused"
    else:
        assert any(call.fault or call.status != 200 for call in fake.calls("sendMessage"))
    if fault.user_says:
        users = [m for m in fake.messages(USER, include_incoming=True) if not m.from_bot]
        assert [m.text for m in users] == ["hello", MEANWHILE], "the user's words untouched"
