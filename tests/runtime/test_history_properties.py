"""Property: whatever a user and a flaky provider do to a session, every request the
runtime sends is one the real API accepts, and the next plain turn succeeds.

Random scenarios (text turns, tool rounds, /cancel at any point, 429/529/500, dropped
streams, ``error`` events, blank and empty answers, restarts, long messages near a small
context window) run over the real runtime, the official SDK, the strict Anthropic fake
and SQLite. CI runs a modest number of examples; ``python bench/history_properties.py``
runs thousands.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, example, given, settings

from tests.fakes.anthropic_api import AnthropicFake
from tests.fakes.openai_api import LLAMACPP, OLLAMA, OPENAI, Dialect, FakeModel, OpenAIFake
from tests.hypothesis_budget import examples
from tests.runtime.history_scenarios import (
    Answer,
    CancelTurn,
    FailTurn,
    Restart,
    Step,
    TextTurn,
    ToolTurn,
    playing,
    scenarios,
)
from tests.runtime.wires import OpenAIWire, Wire

CI_EXAMPLES = 50
OPENAI_EXAMPLES = {"openai": 25, "ollama": 10, "llamacpp": 10}


async def play_all(fake: AnthropicFake | Wire, scenario: list[Step]) -> None:
    with tempfile.TemporaryDirectory(prefix="thalos-prop-") as folder:
        async with playing(Path(folder) / "thalos.db", fake) as player:
            for step in scenario:
                await player.play(step)


BLANK = Answer(("\n", "\n"))
ISSUE_PATHS: list[list[Step]] = [
    [CancelTurn("hi", 0, "mid_text", "\n\n"), TextTurn("again", Answer(("ok",)))],
    [TextTurn("hi", BLANK), Restart(), TextTurn("again", Answer(("ok",)))],
    [ToolTurn("look", (1,), (Answer(()),), Answer(()))],
    [
        TextTurn("a long question " * 300, Answer(("ok",))),
        FailTurn("use tools", 1, "500", ""),
        TextTurn("a long question " * 300, Answer(("ok",))),
        CancelTurn("now", 1, "mid_tool", ""),
    ],
]


def test_every_request_is_valid_and_the_next_turn_succeeds() -> None:
    with AnthropicFake() as fake:

        @settings(
            max_examples=examples(CI_EXAMPLES),
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(scenarios)
        @example(ISSUE_PATHS[0])
        @example(ISSUE_PATHS[1])
        @example(ISSUE_PATHS[2])
        @example(ISSUE_PATHS[3])
        def check(scenario: list[Step]) -> None:
            anyio.run(play_all, fake, scenario)

        check()


@pytest.mark.parametrize("dialect", [OPENAI, OLLAMA, LLAMACPP], ids=lambda d: d.name)
def test_the_same_property_holds_on_openai_compatible_servers(dialect: Dialect) -> None:
    """The same scenarios over the OpenAI provider and the strict OpenAI-compatible fake,
    in the hosted API's dialect and in Ollama's and llama.cpp's (no usage chunk, "stop"
    after tool calls, tool-call ids missing or repeated): 0 refusals."""
    with OpenAIFake(dialect=dialect, model=FakeModel(name="claude-test")) as fake:
        wire = OpenAIWire(fake)

        @settings(
            max_examples=examples(OPENAI_EXAMPLES[dialect.name]),
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(scenarios)
        @example(ISSUE_PATHS[0])
        @example(ISSUE_PATHS[2])
        @example(ISSUE_PATHS[3])
        def check(scenario: list[Step]) -> None:
            anyio.run(play_all, wire, scenario)

        check()
        assert not fake.refusals
