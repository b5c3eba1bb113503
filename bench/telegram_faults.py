"""The delivery fault matrix, run against the daemon's host (``bench/telegram.py --faults``).

For each streaming mode (side by side, each with its own fake and daemon), every fault of
tests/fakes/telegram_matrix.py hits the first sendMessage of an answer, ``--repeat``
times. Each answer's text is unique, so once every daemon has drained, the chat tells
for each one whether it was lost (never shown whole), duplicated (shown whole more than
once, or a part of it left standing in another message), and how many requests came
before a retry_after had run out (early). Also printed: how many checks the bot made
(editMessageText on an id to see whether a send arrived) and the time from the user's
message to the whole answer being visible.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from thalos_bot.config.loader import LoadedConfig
from thalos_bot.config.models import Settings
from thalos_bot.providers.scripted import ScriptedProvider
from thalos_bot.service.host import open_host

CHAT = 4242
ANSWER_TIMEOUT = 30.0
"""Seconds an answer may take before it counts as lost."""
_CHECK_ANSWERS = ("not modified", "not found", "can't be edited")


@dataclass
class Cell:
    """One fault in one mode, over its repetitions."""

    runs: int = 0
    lost: int = 0
    duplicated: int = 0
    early: int = 0
    checks: int = 0
    seconds: list[float] = field(default_factory=list)


@dataclass
class Window:
    fault: str
    text: str
    start: float
    end: float = float("inf")


async def run_mode(mode: str, args: argparse.Namespace, token: str) -> dict[str, Cell]:
    from tests.fakes.telegram_api import TelegramFake
    from tests.fakes.telegram_matrix import answer_steps, faults, showing

    matrix = faults(times_429=args.times_429)
    cells = {fault.name: Cell() for fault in matrix}
    windows: list[Window] = []
    # Long enough for a request left hanging to time out and its check to follow.
    quiet = args.request_timeout + args.chat_rate + 1.0
    with (
        TelegramFake(token, per_chat_interval=args.chat_rate, burst=3) as fake,
        tempfile.TemporaryDirectory() as state,
    ):
        async with _daemon(fake, mode, args, Path(state)) as provider:
            for round_ in range(args.repeat):
                for index, fault in enumerate(matrix):
                    text = f"Answer {round_}.{index} ({fault.name}): " + "words " * 20
                    text = text.strip()
                    provider.push(answer_steps(fake, mode, fault, text))
                    fault.arm(fake)
                    window = Window(fault.name, text, time.monotonic())
                    if windows:
                        windows[-1].end = window.start
                    windows.append(window)
                    fake.push_text(CHAT, CHAT, f"question {round_}.{index}")
                    wanted = 2 if fault.user_says else 1
                    visible = await _settle(fake, text, wanted=wanted, quiet=quiet)
                    cells[fault.name].seconds.append(visible - window.start)
        # The daemon has drained: count what the chat shows.
        texts = fake.texts(CHAT)
        violations = fake.retry_after_violations
        calls = fake.calls("editMessageText", chat_id=CHAT)
        for window in windows:
            cell = cells[window.fault]
            whole, parts = showing(texts, window.text)
            cell.runs += 1
            cell.lost += whole == 0
            cell.duplicated += whole > 1 or parts > 0
            cell.early += sum(1 for v in violations if window.start <= v.at < window.end)
            cell.checks += sum(
                1 for c in calls if window.start <= c.at < window.end and _is_check(c.response)
            )
    return cells


def _is_check(response: dict[str, Any] | None) -> bool:
    description = str((response or {}).get("description", "")).lower()
    return any(answer in description for answer in _CHECK_ANSWERS)


async def _settle(fake: Any, text: str, *, wanted: int, quiet: float) -> float:
    """Wait until the answer is visible (and the reply to the user's second message, if
    any); return that moment. Then wait until the chat has been quiet for a while (a
    check may still be under way), so one fault's aftermath does not spill into the next
    fault's window."""
    before = len(fake.texts(CHAT))
    with anyio.move_on_after(ANSWER_TIMEOUT):
        await fake.wait_for(
            lambda: text in fake.texts(CHAT) and len(fake.texts(CHAT)) >= before + wanted,
            ANSWER_TIMEOUT,
        )
    visible = time.monotonic()
    while True:
        calls = fake.calls(chat_id=CHAT)
        idle = time.monotonic() - (calls[-1].at if calls else 0.0)
        if idle >= quiet:
            return visible
        await anyio.sleep(quiet - idle)


@asynccontextmanager
async def _daemon(
    fake: Any, mode: str, args: argparse.Namespace, state: Path
) -> AsyncIterator[ScriptedProvider]:
    """The daemon's host on a fresh state folder, polling the fake; yields its provider."""
    settings = Settings.model_validate(
        {
            "provider": {"kind": "scripted"},
            "pump": {"flush_interval": args.flush},
            "logging": {"level": "warning"},
            "channels": {
                "telegram": {
                    "enabled": True,
                    "allowed_user_ids": [CHAT],
                    "base_url": fake.base_url,
                    "streaming": mode,
                    "poll_timeout": 10,
                    "request_timeout": args.request_timeout,
                    "chat_min_interval": args.chat_rate,
                    "backoff_initial": 0.2,
                    "backoff_max": 2.0,
                }
            },
        }
    )
    async with (
        open_host(LoadedConfig(settings, None, state)) as host,
        anyio.create_task_group() as group,
    ):
        provider = host.provider
        assert isinstance(provider, ScriptedProvider)
        group.start_soon(host.pump.run, host.sources)
        await fake.wait_for(lambda: fake.polling, 10)
        try:
            yield provider
        finally:
            host.pump.stop()


async def run_fault_matrix(args: argparse.Namespace, token: str) -> dict[str, dict[str, Cell]]:
    results: dict[str, dict[str, Cell]] = {}

    async def one(mode: str) -> None:
        results[mode] = await run_mode(mode, args, token)

    async with anyio.create_task_group() as group:
        for mode in args.modes:
            group.start_soon(one, mode)
    return {mode: results[mode] for mode in args.modes}


def report_fault_matrix(results: dict[str, dict[str, Cell]], args: argparse.Namespace) -> None:
    print(
        f"fault matrix: each fault on an answer's first sendMessage, {args.repeat} time(s) per "
        f"mode; request_timeout {args.request_timeout:.1f} s, per-chat pace "
        f"{args.chat_rate:.2f} s"
    )
    print("per mode: lost / duplicated / early sends, checks made, median time to the answer")
    print()
    modes = list(results)
    names = list(next(iter(results.values())))
    header = f"{'fault':<30}" + "".join(f" | {mode:^26}" for mode in modes)
    print(header)
    print("-" * len(header))
    totals = {mode: Cell() for mode in modes}
    for name in names:
        row = f"{name:<30}"
        for mode in modes:
            cell = results[mode][name]
            total = totals[mode]
            total.runs += cell.runs
            total.lost += cell.lost
            total.duplicated += cell.duplicated
            total.early += cell.early
            total.checks += cell.checks
            seconds = statistics.median(cell.seconds) if cell.seconds else float("nan")
            row += (
                f" | {cell.lost:>2} / {cell.duplicated:>2} / {cell.early:>2}  "
                f"{cell.checks:>3} ch {seconds:>5.2f}s"
            )
        print(row)
    print("-" * len(header))
    print(
        f"{'total':<30}"
        + "".join(
            f" | {t.lost:>2} / {t.duplicated:>2} / {t.early:>2}  {t.checks:>3} ch {t.runs:>4} ans"
            for t in totals.values()
        )
    )
