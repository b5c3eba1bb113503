"""Tool approvals in a Matrix room, which has no buttons: a message listing the choices,
answered by the owner's reaction or reply; a stranger's answer, a late one and a second
one change nothing. A decided question is edited to say the outcome and who decided, and
no longer lists the choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.matrix.accounts import register, unique
from tests.matrix.bot import running_bot
from tests.matrix.human import Human, Shown
from tests.matrix.synapse import SynapseServer
from tests.tools.test_gate import FsSource, ListAudit
from thalos_bot.providers.scripted import CallTool, Say, ScriptedProvider
from thalos_bot.tools.catalog import SourceCatalog
from thalos_bot.tools.gate import PermissionGate
from thalos_bot.tools.policy import PolicySet, ToolPolicy

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _tools() -> tuple[SourceCatalog, FsSource]:
    source = FsSource()
    policies = PolicySet([ToolPolicy("fs__write_*", action="ask")])
    gate = PermissionGate(policies, timeout=60.0, audit=ListAudit())
    return SourceCatalog([source], policies, gate=gate), source


def _questions(human: Human, room: str, bot: str) -> list[Shown]:
    return [
        m
        for m in human.shown(room, bot)
        if "Allow" in m.body or "Approved" in m.body or "Denied" in m.body
    ]


async def test_the_owners_reaction_decides_and_strangers_late_and_second_answers_do_not(
    synapse: SynapseServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bot = await register(synapse, unique("bot"))
    alice = await register(synapse, unique("alice"))
    mallory = await register(synapse, unique("mallory"))
    tools, source = _tools()
    provider = ScriptedProvider(
        [
            [CallTool("fs__write_file", {"path": "a.md", "content": "x"})],
            [Say("written")],
            [CallTool("fs__write_file", {"path": "b.md", "content": "y"})],
            [Say("not written")],
        ]
    )
    async with (
        running_bot(synapse, bot, [alice.user_id], monkeypatch, tmp_path, provider, tools=tools),
        Human(synapse, alice) as owner,
        Human(synapse, mallory) as stranger,
    ):
        room = await owner.direct_chat(bot.user_id)
        await owner.until(lambda h: h.joined(room, bot.user_id))
        await owner.call(
            "POST", f"/_matrix/client/v3/rooms/{room}/invite", {"user_id": mallory.user_id}
        )
        await stranger.join(room)
        await owner.say(room, "write a")
        asked = (await owner.until(lambda h: _questions(h, room, bot.user_id)))[0]
        assert all(key in asked.body for key in ("✅", "🔁", "❌"))
        await stranger.react(room, asked.event_id, "✅")
        await owner.react(room, asked.event_id, "✅")
        await owner.until(
            lambda h: (
                "written" in h.bodies(room, bot.user_id)
                and any("✅ Approved" in m.body for m in h.shown(room, bot.user_id))
            )
        )
        closed = [m for m in owner.shown(room, bot.user_id) if m.event_id == asked.event_id]
        assert closed[0].body.startswith("🔐 Allow")
        assert "✅ Approved by " + alice.user_id in closed[0].body
        assert "React ✅" not in closed[0].body, "the choices go once it is decided"
        # A second answer (and a late one) to the decided question: harmless.
        await owner.react(room, asked.event_id, "❌")
        await owner.say(room, "no", reply_to=asked.event_id)
        # The next question, answered by a reply.
        await owner.say(room, "write b")
        second = await owner.until(
            lambda h: [q for q in _questions(h, room, bot.user_id) if q.event_id != asked.event_id]
        )
        await owner.say(room, "no", reply_to=second[0].event_id)
        # The answer and the question's closing edit may come in either order.
        await owner.until(
            lambda h: (
                "not written" in h.bodies(room, bot.user_id)
                and any("⛔ Denied" in m.body for m in h.shown(room, bot.user_id))
            )
        )
        shown = owner.shown(room, bot.user_id)
    assert [tool for tool, _ in source.calls] == ["write_file"]
    assert source.calls[0][1]["path"] == "a.md"
    by_id = {m.event_id: m.body for m in shown}
    assert "✅ Approved by " + alice.user_id in by_id[asked.event_id]
    assert "⛔ Denied by " + alice.user_id in by_id[second[0].event_id]
    # The late "no" never reached the model as a message: two turns, two calls each.
    assert len(provider.requests) == 4
    assert [b for b in by_id.values() if b.startswith("You said")] == []
