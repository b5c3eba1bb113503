"""The history property, long run: thousands of random conversations against the real
runtime, an official SDK, a strict fake and SQLite.

    python bench/history_properties.py [--examples 3000] [--seed N]
        [--wire anthropic|openai|ollama|llamacpp]

``--wire`` picks the fake: Anthropic's (the default), or the OpenAI-compatible one in the
hosted API's, Ollama's or llama.cpp's dialect.

Each example is a random scenario of up to 8 steps (text turns, tool rounds with one to
three calls, /cancel before the first token, mid-text, mid-tool or between rounds,
429/529/500, a dropped stream, an ``error`` event, blank and empty answers, a restart
from the same database, long messages near a small context window), each followed by a
plain text turn. Printed: how many examples ran, the steps and requests they made, the
time taken, and what was found (the shrunk failing scenario, or nothing).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the scenarios live with the tests

import anyio  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from structlog.testing import capture_logs  # noqa: E402

from tests.fakes.anthropic_api import AnthropicFake  # noqa: E402
from tests.fakes.openai_api import LLAMACPP, OLLAMA, OPENAI, FakeModel, OpenAIFake  # noqa: E402
from tests.runtime.history_scenarios import Stats, Step, playing, scenarios  # noqa: E402
from tests.runtime.wires import OpenAIWire, Wire  # noqa: E402

DIALECTS = {"openai": OPENAI, "ollama": OLLAMA, "llamacpp": LLAMACPP}

WATCHED = ("history_trimmed", "history_repaired", "turn_crashed", "turn_commit_failed")


@contextmanager
def wire_for(name: str) -> Iterator[AnthropicFake | Wire]:
    if name == "anthropic":
        with AnthropicFake() as anthropic:
            yield anthropic
        return
    with OpenAIFake(dialect=DIALECTS[name], model=FakeModel(name="claude-test")) as fake:
        yield OpenAIWire(fake)


async def play_all(
    fake: AnthropicFake | Wire, scenario: list[Step], stats: Stats, events: Counter[str]
) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="thalos-bench-") as folder,
        capture_logs() as logs,
    ):
        try:
            async with playing(Path(folder) / "thalos.db", fake, stats) as player:
                for step in scenario:
                    await player.play(step)
        finally:
            events.update(e["event"] for e in logs if e["event"] in WATCHED)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--wire", choices=["anthropic", *DIALECTS], default="anthropic")
    args = parser.parse_args()
    stats = Stats()
    events: Counter[str] = Counter()
    examples = 0
    started = time.monotonic()
    found: BaseException | None = None
    with wire_for(args.wire) as fake:

        @settings(
            max_examples=args.examples,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(scenarios)
        def check(scenario: list[Step]) -> None:
            nonlocal examples
            examples += 1
            anyio.run(play_all, fake, scenario, stats, events)

        run = check if args.seed is None else seed(args.seed)(check)
        try:
            run()
        except Exception as err:  # the property failed: report it
            found = err
    elapsed = time.monotonic() - started

    print(f"wire:              {args.wire}")
    print(f"examples run:      {examples} (asked for {args.examples})")
    print(f"turns played:      {stats.turns} (each step is followed by a plain turn)")
    print(f"requests checked:  {stats.requests} (every one against the strict rules)")
    print(
        f"time:              {elapsed:.1f} s ({elapsed / max(examples, 1) * 1000:.0f} ms/example)"
    )
    print(f"trimmed requests:  {events['history_trimmed']} (history near the context window)")
    print(f"repairs needed:    {events['history_repaired']} (what the runtime stores needs none)")
    print(f"crashes:           {events['turn_crashed'] + events['turn_commit_failed']}")
    print("steps by kind:")
    for name, count in sorted(stats.steps.items()):
        print(f"  {name:<30} {count}")
    if found is None:
        print("found:             nothing (no refused request, no broken history, no failed turn)")
        return 0
    print(f"found:             {type(found).__name__}: {found}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
