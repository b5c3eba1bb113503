"""Rendering the model's Markdown for Telegram: how long it takes, and whether other
chats wait for it.

    python bench/render.py [--fuzz 2000] [--seed 12] [--ticks 256]

Printed:

* a realistic 64 KB answer (the test corpus, repeated) and a 4 KB slice of it:
  ``to_html`` and ``split`` with cold caches (best of 5), against the targets
  < 50 ms for 64 KB and < 5 ms for 4 KB;
* adversarial lines, 4 KB and 64 KB each (backticks, asterisks, underscores, brackets,
  nested emphasis, a 10,000-deep quote, …): ms and ms per KB (target < 5 ms per 4 KB);
* fuzzed inputs (random Markdown-ish text, 1–16 KB): the worst ms per KB (target never
  above 20), and that every part is valid Telegram HTML within the message bound;
* a streamed answer: a prefix growing to 4096 characters (and on past a cut),
  re-rendered each tick the way the sender does (split, then to_html of the first
  part): p50 / p99 / max per tick;
* the event-loop stall another chat sees: a ping task's lateness while the streamed
  answer is rendered on the same loop, against the same ping with no rendering.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from tests.fakes.telegram_html import parse_html
from thalos_bot.channels.text import carry
from thalos_bot.channels.text.measure import utf16_len
from thalos_bot.channels.text.split import Carry
from thalos_bot_telegram import markdown
from thalos_bot_telegram.limits import MAX_UNITS, split
from thalos_bot_telegram.markdown import to_html

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "telegram" / "corpus"

ADVERSARIAL = {
    "`a`* (the 7.6 s line)": "`a`*",
    "asterisks": "*",
    "underscores": "_",
    "a_ intraword": "a_",
    "backticks": "`",
    "open brackets": "[",
    "image openers ![": "![",
    "link openers [a](": "[a](",
    "[]( runs": "[](",
    "nested emphasis *a **b ": "*a **b ",
    "mixed *_`[~": "*_`[~",
    "tildes": "~~",
    "angle brackets": "<",
    "ampersands": "&",
    "backslashes": "\\",
    "> > > quote markers": "> ",
    "- - - list markers": "- ",
    "pipes": "|",
}


def cold(function: Callable[[str], object], text: str, repeat: int = 5) -> float:
    """Best CPU time in ms with the renderer's caches emptied before each run.

    CPU time, not wall time: on a shared machine the wall clock also counts the time
    other processes held the core. The stall section measures wall time."""
    best = math.inf
    for _ in range(repeat):
        markdown.clear_cache()
        carry.clear_cache()
        start = time.process_time()
        function(text)
        best = min(best, time.process_time() - start)
    return best * 1000


def realistic(size: int) -> str:
    answers = [path.read_text(encoding="utf-8") for path in sorted(CORPUS.glob("*.md"))]
    text = "\n\n".join(answers)
    while len(text) < size:
        text += "\n\n" + text
    return text[:size]


def deliver(text: str) -> int:
    """Messages the chat receives for ``text``; checks every part on the way."""
    count = 0
    offset = 0
    state: Carry | None = None
    while True:
        parts = split(text[offset:], state)
        part = parts[0]
        parsed = parse_html(to_html(part.text))
        if parsed.dropped or utf16_len(parsed.text) > MAX_UNITS or utf16_len(part.text) > MAX_UNITS:
            raise AssertionError(f"invalid part: {part.text[:80]!r}")
        count += 1
        if len(parts) == 1:
            return count
        offset += part.consumed
        state = part.fence_after


def section(title: str) -> None:
    print(f"\n{title}\n{'-' * len(title)}")


def bench_realistic() -> None:
    section("Realistic answer (test corpus; CPU ms, cold caches, best of 5)")
    for size, target in ((65_536, 50.0), (4_096, 5.0)):
        text = realistic(size)
        html_ms = cold(to_html, text)
        split_ms = cold(split, text)
        print(
            f"{size // 1024:>3} KB  to_html {html_ms:7.2f} ms   split {split_ms:7.2f} ms"
            f"   target < {target:g} ms: {'met' if html_ms < target else 'MISSED'}"
        )


def bench_adversarial() -> None:
    section("Adversarial lines (CPU ms, cold; split of the 64 KB one)")
    print(f"{'input':<28}{'4 KB ms':>9}{'64 KB ms':>10}{'ms/KB':>8}{'split 64K':>11}  < 5 ms/4KB")
    cases = {**ADVERSARIAL}
    worst = 0.0
    for name, unit in cases.items():
        small = (unit * (4096 // len(unit) + 1))[:4096]
        large = (unit * (65_536 // len(unit) + 1))[:65_536]
        small_ms = cold(to_html, small)
        large_ms = cold(to_html, large, repeat=2)
        split_ms = cold(split, large, repeat=2)
        worst = max(worst, small_ms)
        verdict = "met" if small_ms < 5 else "MISSED"
        print(
            f"{name:<28}{small_ms:9.2f}{large_ms:10.2f}{large_ms / 64:8.2f}"
            f"{split_ms:11.2f}  {verdict}"
        )
    deep = ">" * 10_000 + " deep"
    deep_ms = cold(to_html, deep)
    worst = max(worst, deep_ms)
    print(f"{'10,000-deep quote':<28}{deep_ms:9.2f}")
    print(f"worst 4 KB: {worst:.2f} ms")


_ALPHABET = [*"ab cd *_`~[]()!<>&#|-:\\\n123.", "é", "😀", "👍🏽", "中", "http://x.y/"]
_ALPHABET += ["```", "```python\n", "\n\n", "    ", "> ", "- ", "1. ", "**"]
_ALPHABET += ["| a | b |\n|---|--|\n", "[link](https://example.org/a_(b))"]


def bench_fuzz(examples: int, seed: int) -> None:
    section(f"Fuzzed inputs ({examples}, seed {seed})")
    rng = random.Random(seed)
    worst = 0.0
    worst_split = 0.0
    worst_input = ""
    over_bound = 0
    for _ in range(examples):
        pieces = [rng.choice(_ALPHABET) for _ in range(rng.randint(1, 200))]
        unit = "".join(pieces)
        size = rng.randint(1024, 16_384)
        text = (unit * (size // max(1, len(unit)) + 1))[:size]
        markdown.clear_cache()
        carry.clear_cache()
        start = time.process_time()
        to_html(text)
        middle = time.process_time()
        split(text)
        end = time.process_time()
        kilobytes = len(text) / 1024
        per_kb = (middle - start) * 1000 / kilobytes
        worst_split = max(worst_split, (end - middle) * 1000 / kilobytes)
        if per_kb > worst:
            worst, worst_input = per_kb, text[:40]
        if deliver(text) > math.ceil(utf16_len(text) / 4000) + 1:
            over_bound += 1
    verdict = "met" if worst < 20 else "MISSED"
    print(f"worst to_html: {worst:.2f} ms CPU per KB (target < 20: {verdict})")
    print(f"  on an input starting {worst_input!r}")
    print(f"worst split:   {worst_split:.2f} ms CPU per KB")
    print(f"answers over ceil(units / 4000) + 1 messages: {over_bound}; every part valid")


def streamed_ticks(text: str, step: int) -> list[float]:
    """ms per tick while ``text`` arrives ``step`` characters at a time, rendered the
    way the sender does it: split what is not committed, render the first part."""
    markdown.clear_cache()
    carry.clear_cache()
    ticks: list[float] = []
    offset = 0
    state: Carry | None = None
    for end in range(step, len(text) + step, step):
        start = time.process_time()
        parts = split(text[offset:end], state)
        while len(parts) > 1:  # the first part is complete: it becomes a message
            offset += parts[0].consumed
            state = parts[0].fence_after
            parts = split(text[offset:end], state)
        to_html(parts[0].text)
        ticks.append((time.process_time() - start) * 1000)
    return ticks


def bench_streaming(ticks: int) -> None:
    section("Streaming: a growing prefix re-rendered each tick (CPU ms per tick)")
    prose = realistic(8192)
    one_paragraph = " ".join(realistic(8192).split())  # no blank lines: nothing cached
    for name, text in (("corpus text to 4 KB", prose[:4096]), ("corpus text to 8 KB", prose)):
        series = streamed_ticks(text, max(1, len(text) // ticks))
        print(f"{name:<34}{_summary(series)}")
    series = streamed_ticks(one_paragraph[:4096], 4096 // ticks)
    print(f"{'one 4 KB paragraph (no cache help)':<34}{_summary(series)}")


def _summary(series: list[float]) -> str:
    ordered = sorted(series)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"ticks {len(series):4}  p50 {statistics.median(series):6.2f} ms  "
        f"p99 {p99:6.2f} ms  max {ordered[-1]:6.2f} ms"
    )


async def _ping(lateness: list[float], done: anyio.Event, period: float) -> None:
    while not done.is_set():
        start = time.perf_counter()
        await anyio.sleep(period)
        lateness.append((time.perf_counter() - start - period) * 1000)


async def _stall(
    render: bool, text: str, step: int, period: float
) -> tuple[list[float], list[float]]:
    """Ping lateness (ms) while ``text`` streams, and how long each render held the loop."""
    lateness: list[float] = []
    held: list[float] = []
    done = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(_ping, lateness, done, period)
        offset = 0
        state: Carry | None = None
        for end in range(step, len(text) + step, step):
            await anyio.sleep(0.02)  # the flush cadence between ticks
            if render:
                start = time.perf_counter()
                parts = split(text[offset:end], state)
                while len(parts) > 1:
                    offset += parts[0].consumed
                    state = parts[0].fence_after
                    parts = split(text[offset:end], state)
                to_html(parts[0].text)
                held.append((time.perf_counter() - start) * 1000)
        done.set()
    return lateness, held


def bench_stall() -> None:
    section("Event-loop stall for other chats (wall clock; ping every 5 ms)")
    markdown.clear_cache()
    carry.clear_cache()
    text = realistic(16_384)
    hostile = ("`a`*" * 4096)[:16_384]
    for name, render, source in (
        ("no rendering (baseline)", False, text),
        ("16 KB answer streamed, 64 ch/tick", True, text),
        ("16 KB of `a`* streamed", True, hostile),
    ):
        lateness, held = anyio.run(_stall, render, source, 64, 0.005)
        ordered = sorted(lateness)
        p99 = ordered[int(len(ordered) * 0.99)]
        loop = f"  loop held by a render: max {max(held):5.2f} ms" if held else ""
        print(
            f"{name:<36}ping lateness p50 {statistics.median(ordered):5.2f} ms  "
            f"p99 {p99:5.2f} ms  max {ordered[-1]:5.2f} ms{loop}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fuzz", type=int, default=500)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--ticks", type=int, default=256)
    args = parser.parse_args()
    print("load average:", " ".join(f"{value:.2f}" for value in os.getloadavg()))
    bench_realistic()
    bench_adversarial()
    bench_streaming(args.ticks)
    bench_stall()
    bench_fuzz(args.fuzz, args.seed)


if __name__ == "__main__":
    main()
