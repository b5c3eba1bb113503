"""The pump over the scripted provider: lifecycle edges, commands, flush invariants."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.pump.harness import USER, Harness, RecordingAdapter, running_pump, texts
from thalos_bot.channels.ports import Notice, TextUpdate, TurnStarted
from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.errors import ErrorCode
from thalos_bot.domain.events import (
    TokenUsage,
    ToolCallStarted,
    TurnCompleted,
    TurnFailed,
)
from thalos_bot.domain.ids import ConversationId, SessionId
from thalos_bot.providers.scripted import Await, CallTool, Say, ScriptedProvider
from thalos_bot.pump.flush import FlushTicker, Lane
from thalos_bot.tools.types import ToolCall, ToolContext, ToolResult, ToolSpec

pytestmark = pytest.mark.anyio


async def test_first_message_binds_silently_and_runs() -> None:
    async with running_pump(ScriptedProvider([[Say("Hi ", "there")]])) as h:
        await h.source.send("hello").wait()
        binding = await h.binding()
    deliveries = h.adapter.of()
    assert not [d for d in deliveries if isinstance(d, Notice)]
    assert isinstance(deliveries[0], TurnStarted)
    (terminal,) = h.adapter.terminals()
    assert isinstance(terminal, TurnCompleted)
    assert terminal.text == "Hi there"
    assert binding is not None
    assert binding.agent_id == "helper"


async def test_idle_conversation_rolls_onto_a_new_session() -> None:
    provider = ScriptedProvider([[Say("one")], [Say("two")]])
    async with running_pump(provider, idle_timeout=600) as h:
        await h.source.send("first").wait()
        first = await h.binding()
        h.clock.advance(seconds=601)
        await h.source.send("second").wait()
        second = await h.binding()
        old = await h.runtime.session_info(first.session_id)
    assert second.session_id != first.session_id
    assert old is not None
    assert old.status == "closed"
    notices = h.adapter.notices()
    assert len(notices) == 1
    assert "idle for 10m 1s" in notices[0]
    assert h.adapter.final_texts() == ["one", "two"]
    # The new session starts with an empty history: the model saw only "second".
    assert [m.text for m in provider.requests[1].messages] == ["second"]


async def test_activity_within_the_timeout_keeps_the_session() -> None:
    async with running_pump(ScriptedProvider(), idle_timeout=600) as h:
        await h.source.send("first").wait()
        first = await h.binding()
        h.clock.advance(seconds=599)
        await h.source.send("second").wait()
        h.clock.advance(seconds=599)
        await h.source.send("third").wait()
        third = await h.binding()
    assert third.session_id == first.session_id
    assert h.adapter.notices() == []


async def test_busy_message_is_refused_at_once_and_the_turn_completes_intact() -> None:
    gate = anyio.Event()
    provider = ScriptedProvider([[Say("The answer "), Await(gate.wait), Say("is 42.")]])
    async with running_pump(provider) as h:
        first = h.source.send("question")
        await h.adapter.wait_for(lambda: h.pump.running_turns == 1)
        with anyio.fail_after(1):
            await h.source.send("are you there?").wait()
        assert len(h.adapter.notices()) == 1
        assert "Still working" in h.adapter.notices()[0]
        gate.set()
        await first.wait()
    (terminal,) = h.adapter.terminals()
    assert isinstance(terminal, TurnCompleted)
    assert terminal.text == "The answer is 42."
    assert len(provider.requests) == 1
    assert all("are you there" not in m.text for m in provider.requests[0].messages)


async def test_dead_session_unbinds_and_asks_to_resend_without_retrying() -> None:
    provider = ScriptedProvider([[Say("one")], [Say("three")]])
    async with running_pump(provider) as h:
        await h.source.send("first").wait()
        binding = await h.binding()
        # The session disappears behind the pump's back (e.g. removed by an operator).
        await h.runtime.close_session(binding.session_id, USER.context)
        await h.source.send("second").wait()
        after_dead = await h.binding()
        await h.source.send("third").wait()
        rebound = await h.binding()
    assert after_dead is None
    assert "send it again" in h.adapter.notices()[0]
    assert h.adapter.final_texts() == ["one", "three"]
    assert len(provider.requests) == 2, "the dead message was not retried"
    assert rebound.session_id != binding.session_id


async def test_help_agents_and_status() -> None:
    async with running_pump(ScriptedProvider([[Say("ok")]])) as h:
        await h.source.send("/help").wait()
        await h.source.send("/status").wait()
        await h.source.send("hello").wait()
        h.clock.advance(minutes=3)
        await h.source.send("  /STATUS@thalos_bot  ").wait()
        await h.source.send("/agents").wait()
    help_text, unbound, status, agents = h.adapter.notices()
    for command in ("/new", "/end", "/status", "/agents", "/cancel", "/help"):
        assert command in help_text
    assert "No session yet" in unbound
    assert "Agent: Helper (helper)" in status
    assert "Session age: 3m" in status
    assert "Turns: 1" in status
    assert "State: idle" in status
    assert "helper: Helper (current, default) — Helps with anything." in agents
    assert "coder: Coder — Writes code." in agents


async def test_new_switches_agent_and_unknown_agent_lists_them() -> None:
    async with running_pump(ScriptedProvider()) as h:
        await h.source.send("hi").wait()
        first = await h.binding()
        await h.source.send("/new wizard").wait()
        unchanged = await h.binding()
        await h.source.send("/new Coder").wait()
        switched = await h.binding()
        old = await h.runtime.session_info(first.session_id)
    unknown, created = h.adapter.notices()
    assert "no agent called 'wizard'" in unknown
    assert "helper, coder" in unknown
    assert created.startswith("New session with Coder")
    assert unchanged == first
    assert switched.agent_id == "coder"
    assert old is not None
    assert old.status == "closed"


async def test_end_closes_and_unbinds() -> None:
    async with running_pump(ScriptedProvider()) as h:
        await h.source.send("/end").wait()
        await h.source.send("hi").wait()
        binding = await h.binding()
        await h.source.send("/end").wait()
        after = await h.binding()
        info = await h.runtime.session_info(binding.session_id)
    no_session, ended = h.adapter.notices()
    assert "no session" in no_session
    assert "Session ended" in ended
    assert after is None
    assert info is not None
    assert info.status == "closed"


async def test_commands_while_busy() -> None:
    gate = anyio.Event()
    provider = ScriptedProvider([[Say("partial ", "text"), Await(gate.wait), Say("never")]])
    async with running_pump(provider) as h:
        turn = h.source.send("work")
        await h.adapter.wait_for(lambda: h.pump.running_turns == 1)
        for command in ("/status", "/help", "/end", "/new", "/agents", "/frobnicate"):
            await h.source.send(command).wait()
        notices = list(h.adapter.notices())
        await h.source.send("/cancel").wait()
        await turn.wait()
        await h.source.send("/cancel").wait()
    status, help_text, end, new, agents, unknown = notices
    assert "State: writing an answer" in status
    assert "/cancel" in help_text
    assert "Send /cancel first" in end
    assert "Send /cancel first" in new
    assert "Send /cancel first" in agents
    assert "/frobnicate is not a command" in unknown
    (terminal,) = h.adapter.terminals()
    assert isinstance(terminal, TurnFailed)
    assert terminal.error.code is ErrorCode.CANCELLED
    assert terminal.partial_text == "partial text"
    assert "Nothing is running" in h.adapter.notices()[-1]


async def test_unknown_slash_words_never_reach_the_model() -> None:
    provider = ScriptedProvider()
    async with running_pump(provider) as h:
        for text in ("/start", "/frob@some_bot x", "/x_1\nmore", "/NEWS today"):
            await h.source.send(text).wait()
    assert provider.requests == []
    notices = h.adapter.notices()
    assert len(notices) == 4
    assert all("/new, /end, /status, /agents, /cancel, /help" in n for n in notices)


async def test_flush_at_most_one_update_per_tick_and_exact_final_text() -> None:
    chunks = [f"w{i} " for i in range(60)]
    provider = ScriptedProvider([[Say(*chunks, delay=0.004)]] * 3)
    async with running_pump(provider, flush_interval=0.05) as h:
        handled = [h.source.send("go", conversation=f"c{i}") for i in range(3)]
        for event in handled:
            await event.wait()
    for conversation in ("c0", "c1", "c2"):
        updates = h.adapter.updates(conversation)
        ticks = [u.tick for u in updates]
        assert len(ticks) == len(set(ticks)), "two deliveries in one tick"
        assert len(updates) < len(chunks), "deltas were not coalesced"
        (terminal,) = h.adapter.terminals(conversation)
        assert isinstance(terminal, TurnCompleted)
        assert terminal.text == "".join(chunks)
        assert "".join(chunks).startswith(texts(updates))


async def test_terminal_event_does_not_wait_for_the_next_tick() -> None:
    async with running_pump(ScriptedProvider([[Say("quick")]]), flush_interval=10) as h:
        with anyio.fail_after(2):
            await h.source.send("hi").wait()
    (terminal,) = h.adapter.terminals()
    assert isinstance(terminal, TurnCompleted)
    assert len(h.adapter.updates()) <= 1, "at most the turn's leading-edge update"


async def test_the_first_words_go_out_before_any_tick() -> None:
    gate = anyio.Event()
    provider = ScriptedProvider([[Say("Hello"), Await(gate.wait), Say(" world")]])
    async with running_pump(provider, flush_interval=10) as h:
        turn = h.source.send("hi")
        await h.adapter.wait_for(lambda: bool(h.adapter.updates()))
        (first,) = h.adapter.updates()
        assert first.delivery == TextUpdate("Hello")
        assert first.tick == 0, "delivered before the ticker ever ticked"
        gate.set()
        await turn.wait()
    (terminal,) = h.adapter.terminals()
    assert isinstance(terminal, TurnCompleted)
    assert terminal.text == "Hello world"


SESSION = SessionId("s1")


async def test_after_the_first_update_the_cadence_applies() -> None:
    adapter = RecordingAdapter()
    ticker = FlushTicker(interval=3600, on_tick=adapter.on_tick)  # ticked by hand below
    lane = Lane(adapter, ConversationId("c1"))
    ticker.register(lane)
    async with anyio.create_task_group() as group:
        group.start_soon(lane.run)
        lane.add_text("Hel")
        await adapter.wait_for(lambda: len(adapter.records) == 1)
        lane.add_text("lo")
        lane.add_activity(ToolCallStarted(SESSION, "call-1", "calc__add", "{}"))
        await anyio.wait_all_tasks_blocked()
        assert len(adapter.records) == 1, "the second update waits for a tick"
        ticker.tick()
        await adapter.wait_for(lambda: len(adapter.records) == 2)
        lane.add_text(" world")
        await anyio.wait_all_tasks_blocked()
        assert len(adapter.records) == 2
        ticker.tick()
        await adapter.wait_for(lambda: len(adapter.records) == 3)
        lane.finish(TurnCompleted(SESSION, "Hello world", TokenUsage(), (), 0.1))
    first, second, third, final = (r.delivery for r in adapter.records)
    assert first == TextUpdate("Hel")
    assert isinstance(second, TextUpdate)
    assert second.text == "lo"
    assert [a.kind for a in second.activity] == ["tool_call_started"]
    assert third == TextUpdate(" world")
    assert isinstance(final, TurnCompleted)
    assert [r.tick for r in adapter.records] == [0, 1, 2, 2]


class GatedAdder:
    """One tool, ``calc__add``, that answers only once ``gate`` is set."""

    def __init__(self) -> None:
        self.gate = anyio.Event()

    def specs_for(self, agent: AgentDefinition) -> list[ToolSpec]:
        return [ToolSpec("calc__add", "adds")]

    async def call(self, call: ToolCall, context: ToolContext) -> ToolResult:
        await self.gate.wait()
        return ToolResult("42")


async def run_gated_tool_turn(**settings: Any) -> tuple[TextUpdate, list[Any], Any]:
    """A turn that says "Checking.", waits in a tool until a flush went out, then ends."""
    tools = GatedAdder()
    provider = ScriptedProvider([[Say("Checking."), CallTool("calc__add")], [Say("42.")]])
    async with running_pump(provider, **settings) as h:
        h.runtime.tools = tools
        turn = h.source.send("sum?")
        # The first words go out at once; the tool's status line follows (with them, or
        # on the next tick).
        await h.adapter.wait_for(lambda: _activity_shown(h, settings))
        first = h.adapter.updates()[0].delivery
        tools.gate.set()
        await turn.wait()
    assert isinstance(first, TextUpdate)
    return first, h.adapter.updates(), h.adapter.terminals()


def _activity_shown(h: Harness, settings: dict[str, Any]) -> bool:
    updates = [r.delivery for r in h.adapter.updates()]
    if settings.get("tool_status", True) is False:
        return bool(updates)
    return any(isinstance(u, TextUpdate) and u.activity for u in updates)


async def test_tool_activity_rides_on_the_flush() -> None:
    first, updates, terminals = await run_gated_tool_turn()
    assert first.text == "Checking."
    activity = [a.kind for u in updates for a in u.delivery.activity]
    assert activity[:1] == ["tool_call_started"]
    (terminal,) = terminals
    assert isinstance(terminal, TurnCompleted)
    assert terminal.text == "Checking.\n\n42."


async def test_tool_status_lines_can_be_turned_off() -> None:
    _, updates, _ = await run_gated_tool_turn(tool_status=False)
    assert all(not u.delivery.activity for u in updates)


async def test_a_slow_conversation_does_not_delay_another() -> None:
    gate = anyio.Event()
    provider = ScriptedProvider([[Say("slow..."), Await(gate.wait), Say("done")], [Say("fast")]])
    async with running_pump(provider) as h:
        slow = h.source.send("slow one", conversation="slow")
        await h.adapter.wait_for(lambda: h.pump.running_turns == 1)
        with anyio.fail_after(2):
            await h.source.send("fast one", conversation="fast").wait()
        assert h.adapter.final_texts("fast") == ["fast"]
        assert h.adapter.terminals("slow") == []
        gate.set()
        await slow.wait()
    assert h.adapter.final_texts("slow") == ["slow...done"]


async def test_graceful_shutdown_finishes_or_cancels_within_grace() -> None:
    gate = anyio.Event()
    provider = ScriptedProvider([[Say("quick")], [Say("stuck "), Await(gate.wait), Say("never")]])
    async with running_pump(provider, shutdown_grace=0.3) as h:
        quick = h.source.send("a", conversation="quick")
        await quick.wait()
        stuck = h.source.send("b", conversation="stuck")
        await h.adapter.wait_for(lambda: h.pump.running_turns == 1)
        with anyio.fail_after(3):
            h.pump.stop()
            await stuck.wait()
        h.source.send("after stop", conversation="late")
    assert h.source.unread == ["after stop"]
    (cut,) = h.adapter.terminals("stuck")
    assert isinstance(cut, TurnFailed)
    assert cut.error.code is ErrorCode.CANCELLED
    assert cut.partial_text == "stuck "
    assert "restarting" in h.adapter.notices("stuck")[-1]
    assert h.adapter.of("late") == [], "nothing is read after stop"


async def test_shutdown_lets_a_turn_finish_inside_the_grace() -> None:
    gate = anyio.Event()
    provider = ScriptedProvider([[Say("almost "), Await(gate.wait), Say("done")]])
    async with running_pump(provider, shutdown_grace=5) as h:
        turn = h.source.send("b")
        await h.adapter.wait_for(lambda: h.pump.running_turns == 1)
        h.pump.stop()
        gate.set()
        with anyio.fail_after(3):
            await turn.wait()
    (terminal,) = h.adapter.terminals()
    assert isinstance(terminal, TurnCompleted)
    assert terminal.text == "almost done"
    assert h.adapter.notices() == []


async def test_pump_returns_when_sources_end_and_turns_finish() -> None:
    provider = ScriptedProvider([[Say("bye")]])
    async with running_pump(provider) as h:
        h.source.send("last words")
        h.source.close()
        with anyio.fail_after(3):
            while not h.adapter.terminals():
                await anyio.sleep(0.01)
    assert h.adapter.final_texts() == ["bye"]


@pytest.mark.parametrize("redelivered", [False, True])
async def test_a_message_being_bound_when_stop_comes_does_not_start_a_turn(
    redelivered: bool,
) -> None:
    """Refused with "ask again", unless its source hands it over again after the
    restart (a replica's shared inbox): then nothing is said, it is answered later."""
    provider = ScriptedProvider()
    async with running_pump(provider, shutdown_grace=0.2) as h:
        entered = anyio.Event()
        release = anyio.Event()
        real_get = h.conversations.get

        async def slow_get(*args: Any) -> Any:
            entered.set()
            await release.wait()
            return await real_get(*args)

        h.conversations.get = slow_get  # type: ignore[method-assign,assignment]
        handled = h.source.send("hello", redelivered=redelivered)
        await entered.wait()
        h.pump.stop()
        release.set()
        with anyio.fail_after(3):
            await handled.wait()
    assert provider.requests == [], "no turn started after stop()"
    assert h.adapter.terminals() == []
    if redelivered:
        assert h.adapter.notices() == []
    else:
        assert "restarting" in h.adapter.notices()[-1]


class SlowToConfirmAdapter(RecordingAdapter):
    """Shows the final at once, then holds the delivery call until ``confirmed`` (the
    send's reply is still on its way back when the user already reads the answer)."""

    def __init__(self) -> None:
        super().__init__()
        self.confirmed = anyio.Event()

    async def deliver(self, conversation_id: ConversationId, event: Any) -> None:
        await super().deliver(conversation_id, event)
        if isinstance(event, TurnCompleted) and not self.confirmed.is_set():
            await self.confirmed.wait()


async def test_a_message_sent_as_the_answer_arrives_runs_next_instead_of_still_working() -> None:
    provider = ScriptedProvider([[Say("one")], [Say("two")]])
    adapter = SlowToConfirmAdapter()
    async with running_pump(provider, adapter=adapter) as h:
        first = h.source.send("first")
        await adapter.wait_for(lambda: bool(adapter.terminals()))
        assert h.pump.running_turns == 1  # the user reads "one"; the turn is not released
        second = h.source.send("second")
        await anyio.wait_all_tasks_blocked()  # "second" is dispatched as far as it goes
        assert adapter.notices() == []
        assert h.pump.running_turns == 1
        adapter.confirmed.set()
        await first.wait()
        await second.wait()
    assert adapter.notices() == []
    assert adapter.final_texts() == ["one", "two"]
    assert [m.text for m in provider.requests[1].messages][-1] == "second"
