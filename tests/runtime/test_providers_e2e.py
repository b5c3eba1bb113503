"""One conversation (streamed, a tool round, a photo) end to end on each kind of provider,
built from ``bot.toml`` as the daemon builds it: on the Anthropic fake, on the
OpenAI-compatible fake, and on a fallback chain whose first provider answers 529. Then
the history a session leaves on one provider is one the other accepts (mixed histories),
and a server that never said its window compacts when it refuses a prompt as too long."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import anthropic_api as claude
from tests.fakes import openai_api as compat
from tests.fakes.anthropic_api import AnthropicFake
from tests.fakes.openai_api import FakeModel, OpenAIFake
from tests.media.host import jpeg
from tests.provider_pair import pair_runtime, providers_toml
from tests.runtime.conftest import ALICE, RecordingTools
from thalos_bot.config.models import Settings
from thalos_bot.domain.attachments import Attachment
from thalos_bot.domain.events import Info, TextDelta, TurnCompleted
from thalos_bot.runtime.compaction import CompactionPolicy
from thalos_bot.runtime.protocol import TurnRequest, TurnResult
from thalos_bot.runtime.runtime import Runtime

pytestmark = pytest.mark.anyio
PHOTO = jpeg(32, 24)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-real")


def config(anthropic: AnthropicFake, local: OpenAIFake, extra: str = "") -> Settings:
    return Settings.model_validate(
        tomllib.loads(providers_toml(anthropic, local, local_extra=extra))
    )


Script = Callable[[str, str, dict[str, Any] | None], Any]


def on_claude(said: str, then: str, call: dict[str, Any] | None) -> list[Any]:
    first = claude.reply(claude.text(said), claude.tool_use("t__echo", call)) if call else None
    last = claude.reply(claude.text(*then.split("|")))
    return [first, last] if first else [last]


def on_compat(said: str, then: str, call: dict[str, Any] | None) -> list[Any]:
    first = compat.reply(compat.text(said), compat.tool_call("t__echo", call)) if call else None
    last = compat.reply(compat.text(*then.split("|")))
    return [first, last] if first else [last]


async def conversation(
    runtime: Runtime, agent: str, enqueue: Callable[[list[Any]], None], script: Script
) -> list[TurnResult]:
    """A photo and a question (a tool round, then a streamed answer), then a follow-up."""
    session = await runtime.create_session(agent, ALICE)
    enqueue(script("Let me check.", "A red |square.", {"n": 1}))
    photo = Attachment("image", "image/jpeg", PHOTO)
    first = await runtime.run_turn(
        TurnRequest(session.id, ALICE, "What is this?", attachments=(photo,))
    )
    enqueue(script("", "You're |welcome.", None))
    second = await runtime.run_turn(TurnRequest(session.id, ALICE, "Thanks"))
    return [first, second]


def assert_answered(results: list[TurnResult], tools: RecordingTools) -> None:
    assert [r.text for r in results] == [
        "Let me check.\n\nA red square.",
        "You're welcome.",
    ], [r.terminal for r in results]
    assert [c.name for c in tools.calls] == ["t__echo"]
    deltas = [e.text for e in results[1].events if isinstance(e, TextDelta)]
    assert deltas == ["You're ", "welcome."], "streamed, chunk by chunk"


async def test_the_conversation_on_the_anthropic_fake(
    tmp_path: Path, provider_fakes: tuple[AnthropicFake, OpenAIFake]
) -> None:
    anthropic, local = provider_fakes
    async with pair_runtime(tmp_path, config(anthropic, local)) as (runtime, tools, _db):
        results = await conversation(runtime, "cloud", lambda r: anthropic.enqueue(*r), on_claude)
    assert_answered(results, tools)
    first = anthropic.requests[0].body["messages"][0]["content"]
    assert [b["type"] for b in first] == ["image", "text"]
    assert not local.completions


async def test_the_conversation_on_the_openai_compatible_fake(
    tmp_path: Path, provider_fakes: tuple[AnthropicFake, OpenAIFake]
) -> None:
    anthropic, local = provider_fakes
    async with pair_runtime(tmp_path, config(anthropic, local)) as (runtime, tools, _db):
        results = await conversation(runtime, "home", lambda r: local.enqueue(*r), on_compat)
    assert_answered(results, tools)
    first = local.completions[0].body["messages"][0]["content"]
    assert [p["type"] for p in first] == ["image_url", "text"]
    roles = [m["role"] for m in local.completions[1].body["messages"]]
    assert roles == ["user", "assistant", "tool"]
    assert not anthropic.requests


async def test_the_conversation_on_a_fallback_chain_whose_first_provider_is_overloaded(
    tmp_path: Path, provider_fakes: tuple[AnthropicFake, OpenAIFake]
) -> None:
    anthropic, local = provider_fakes
    anthropic.enqueue(*[claude.overloaded() for _ in range(3)])
    async with pair_runtime(tmp_path, config(anthropic, local)) as (runtime, tools, _db):
        results = await conversation(runtime, "cloud", lambda r: local.enqueue(*r), on_compat)
    assert_answered(results, tools)
    notices = [e for r in results for e in r.events if isinstance(e, Info)]
    fallbacks = [n for n in notices if n.name == "model-fallback"]
    assert len(fallbacks) == 2, "one line per turn (the first turn made two model calls)"
    assert fallbacks[0].data == {"provider": "local", "model": "qwen3:8b", "failed": "claude"}
    assert len(anthropic.requests) == 3
    assert len(local.completions) == 3


async def test_a_session_moves_between_providers_and_each_accepts_its_history(
    tmp_path: Path, provider_fakes: tuple[AnthropicFake, OpenAIFake]
) -> None:
    """Turn 1 on Claude (its tool ids), turn 2 falls back to the local model (ours), turn
    3 is Claude's again: every request is one the real APIs accept (the fakes' exit
    fails the test otherwise)."""
    anthropic, local = provider_fakes
    async with pair_runtime(tmp_path, config(anthropic, local)) as (runtime, _tools, _db):
        session = await runtime.create_session("cloud", ALICE)
        anthropic.enqueue(*on_claude("Looking.", "Done.", {"n": 1}))
        assert (await runtime.run_turn(TurnRequest(session.id, ALICE, "one"))).ok
        anthropic.enqueue(claude.overloaded(), claude.overloaded())
        local.enqueue(*on_compat("Looking again.", "Done again.", {"n": 2}))
        second = await runtime.run_turn(TurnRequest(session.id, ALICE, "two"))
        assert second.ok, second.terminal
        anthropic.enqueue(claude.text_reply("Three."))
        third = await runtime.run_turn(TurnRequest(session.id, ALICE, "three"))
    assert third.ok, third.terminal
    sent = local.completions[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    ids = [
        block["id"]
        for message in anthropic.requests[-1].body["messages"]
        for block in message["content"]
        if block["type"] == "tool_use"
    ]
    assert len(ids) == 2
    assert ids[0].startswith("toolu_")
    assert ids[1].startswith("call_"), "the local model's call, in Claude's history"


async def test_an_unknown_window_is_not_guessed_and_a_too_long_refusal_compacts_once(
    tmp_path: Path,
) -> None:
    with AnthropicFake() as anthropic, OpenAIFake(model=FakeModel(context_window=3000)) as local:
        settings = config(anthropic, local, "max_output_tokens = 200")
        policy = CompactionPolicy(keep_recent_turns=1)
        async with pair_runtime(tmp_path, settings, compaction=policy) as (runtime, _tools, _db):
            session = await runtime.create_session("home", ALICE)
            for n in range(5):
                local.enqueue(compat.reply(compat.text(f"answer {n} " + "words " * 400)))
                assert (await runtime.run_turn(TurnRequest(session.id, ALICE, f"q{n}"))).ok
            info = await runtime.session_info(session.id)
            assert info is not None
            assert info.context_window == 0, "unknown: /status says so"
            assert not local.overflows
            local.enqueue(compat.reply(compat.text("A summary of the early turns.")))
            local.enqueue(compat.reply(compat.text("Still here.")))
            last = await runtime.run_turn(TurnRequest(session.id, ALICE, "and now?"))
            info = await runtime.session_info(session.id)
        assert isinstance(last.terminal, TurnCompleted), last.terminal
        assert last.text == "Still here."
        assert len(local.overflows) == 1, "refused once, compacted, then accepted"
        assert any(isinstance(e, Info) and e.name == "context-compacted" for e in last.events)
        assert info is not None
        assert 0 < info.context_window <= 3000, "the refusal taught the window"
