"""A session stored in a broken shape (by an older version) heals on its next turn.

The history is written straight into SQLite, the daemon restarts, and the user just
keeps talking: the request the real SDK sends is accepted by the strict fake, and the
repair is logged once however many turns follow.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.fakes.anthropic_api import AnthropicFake, text_reply
from tests.runtime.conftest import ALICE
from tests.runtime.strict import daemon, store_raw
from tests.runtime.test_repair import BROKEN
from thalos_bot.domain.events import TurnCompleted
from thalos_bot.runtime.protocol import TurnRequest

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("name", list(BROKEN))
async def test_a_broken_stored_session_heals_on_the_next_turn(tmp_path: Path, name: str) -> None:
    broken, fixes = BROKEN[name]
    path = tmp_path / "thalos.db"
    with AnthropicFake() as fake:
        async with daemon(path, fake) as runtime:
            session = await runtime.create_session("helper", ALICE)
        await store_raw(path, session.id, broken)
        fake.enqueue(text_reply("Welcome back."), text_reply("Still fine."))
        with capture_logs() as logs:
            async with daemon(path, fake) as runtime:
                first = await runtime.run_turn(TurnRequest(session.id, ALICE, "I'm back"))
                second = await runtime.run_turn(TurnRequest(session.id, ALICE, "and again"))
    assert isinstance(first.terminal, TurnCompleted), first.terminal
    assert isinstance(second.terminal, TurnCompleted), second.terminal
    assert first.text == "Welcome back."
    repaired = [e for e in logs if e["event"] == "history_repaired"]
    assert len(repaired) == 1, "logged once per session, not on every turn"
    assert repaired[0]["session"] == session.id
    assert {k: repaired[0][k] for k in fixes} == fixes
    sent = fake.requests[-1].body["messages"]
    assert sent[-1]["content"][-1] == {"type": "text", "text": "and again"}
