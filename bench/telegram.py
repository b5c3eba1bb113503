"""The Telegram channel end to end: the daemon's host (SQLite, runtime, pump, the real
python-telegram-bot) against the Telegram fake, with the scripted provider.

    python bench/telegram.py [--answers 20] [--modes draft edit off] [--flush 1.0]
                             [--chunks 60] [--pace 0.04] [--chat-rate 1.0] [--ttft 0.3]
    python bench/telegram.py --faults [--repeat 3] [--times-429 5] [--request-timeout 1]

The fake enforces Telegram-like flood control (``--chat-rate`` seconds per message in a
chat, burst 3; 30/s overall). For each streaming mode, ``--answers`` messages are sent
one after another to one private chat (the modes run side by side, each with its own
fake and daemon); the model streams ``--chunks`` chunks, one every
``--pace`` seconds. Printed per mode:

* Telegram API calls per answer, by method (getUpdates counted apart: it is the
  receiving side, two calls per inbound message: the long poll and its acknowledgement);
* time from the inbound update to the first visible text (a draft or a message), p50/p90;
* final-delivery latency: from the end of the model's stream to the final text being
  visible in the fake, p50/p90/max;
* 429s received and retry_after violations (must be 0);
* first visible text minus the model's time to first token (``--ttft``), p50/p90, with
  the pump's leading edge and, as a baseline, without it (target: at most 0.2 s).

With ``--faults``, the delivery fault matrix runs instead (see bench/telegram_faults.py):
lost, duplicated and early sends per fault and mode (all must be 0).
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from thalos_bot.config.loader import LoadedConfig
from thalos_bot.config.models import Settings
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider
from thalos_bot.service.host import open_host
from thalos_bot.telemetry.logging import configure_logging

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHAT = 4242
TOKEN = "123456:BENCH-" + secrets.token_hex(16)
VISIBLE = frozenset({"sendMessage", "editMessageText", "sendMessageDraft"})


@dataclass
class ModeResult:
    mode: str
    answers: int = 0
    calls: Counter[str] = field(default_factory=Counter)
    polls: int = 0
    first_visible: list[float] = field(default_factory=list)
    final_latency: list[float] = field(default_factory=list)
    refused_429: int = 0
    violations: int = 0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class Bench:
    fake: Any
    provider: ScriptedProvider
    args: argparse.Namespace
    result: ModeResult

    async def one_answer(self, index: int) -> None:
        fake, args = self.fake, self.args
        words = [f"word{index}-{n} " for n in range(args.chunks)]
        answer = "".join(words).strip()
        ended: list[float] = []

        async def mark_end() -> None:
            ended.append(time.monotonic())

        # "End of the stream": just before the last chunk leaves the model.
        last = Say(words[-1])
        self.provider.push([Say(*words[:-1], delay=args.pace), Await(mark_end), last])
        calls_before = len(fake.calls(chat_id=CHAT))
        sent_at = time.monotonic()
        fake.push_text(CHAT, CHAT, f"question {index}")

        def final_call() -> Any:
            """The call that made the whole answer visible (once the fake recorded it)."""
            return next(
                (
                    call
                    for call in fake.calls(chat_id=CHAT)[calls_before:]
                    if call.status == 200
                    and call.method in {"sendMessage", "editMessageText"}
                    and call.response["result"]["text"] == answer
                ),
                None,
            )

        final = await fake.wait_for(final_call, 60)
        first = next(
            call
            for call in fake.calls(chat_id=CHAT)[calls_before:]
            if call.status == 200 and call.method in VISIBLE
        )
        self.result.first_visible.append(first.at - sent_at)
        self.result.final_latency.append(final.at - ended[0])
        self.result.answers += 1


async def run_mode(mode: str, args: argparse.Namespace) -> ModeResult:
    from tests.fakes.telegram_api import TelegramFake

    token = TOKEN
    result = ModeResult(mode)
    with (
        TelegramFake(
            token, per_chat_interval=args.chat_rate, burst=3, global_per_second=30
        ) as fake,
        tempfile.TemporaryDirectory() as state,
    ):
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
                        "chat_min_interval": args.chat_rate,
                    }
                },
            }
        )
        loaded = LoadedConfig(settings, None, Path(state))
        async with open_host(loaded) as host, anyio.create_task_group() as group:
            provider = host.provider
            assert isinstance(provider, ScriptedProvider)
            group.start_soon(host.pump.run, host.sources)
            await fake.wait_for(lambda: fake.polling, 10)
            bench = Bench(fake, provider, args, result)
            for index in range(args.answers):
                await bench.one_answer(index)
            host.pump.stop()
        result.violations = len(fake.retry_after_violations)
        result.refused_429 = sum(1 for call in fake.calls(chat_id=CHAT) if call.status == 429)
        for call in fake.calls(chat_id=CHAT):
            result.calls[call.method] += 1
        result.polls = len(fake.calls("getUpdates"))
    return result


def report(results: list[ModeResult], args: argparse.Namespace) -> None:
    stream = args.chunks * args.pace
    print(
        f"{args.answers} answers per mode; model stream {stream:.2f} s "
        f"({args.chunks} chunks every {args.pace * 1000:.0f} ms); flush {args.flush:.2f} s; "
        f"per-chat pace {args.chat_rate:.2f} s"
    )
    print()
    header = (
        f"{'mode':<6} {'calls/answer (by method)':<58} {'polls/ans':>9} "
        f"{'first p50':>9} {'p90':>6} {'final p50':>9} {'p90':>6} {'max':>6} {'429':>4} {'viol':>4}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        per = ", ".join(
            f"{method} {count / r.answers:.1f}" for method, count in sorted(r.calls.items())
        )
        total = sum(r.calls.values()) / r.answers
        print(
            f"{r.mode:<6} {f'{total:.1f} = {per}':<58} {r.polls / r.answers:>9.1f} "
            f"{percentile(r.first_visible, 0.5):>8.3f}s {percentile(r.first_visible, 0.9):>5.3f}s "
            f"{percentile(r.final_latency, 0.5):>8.3f}s {percentile(r.final_latency, 0.9):>5.3f}s "
            f"{max(r.final_latency):>5.3f}s {r.refused_429:>4} {r.violations:>4}"
        )
    print()
    means = {r.mode: statistics.mean(r.final_latency) for r in results}
    if "off" in means:
        base = means["off"]
        ratios = ", ".join(f"{mode} {value / base:.2f}x" for mode, value in means.items())
        print(f"mean final latency relative to streaming off: {ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=20)
    parser.add_argument("--modes", nargs="+", default=["draft", "edit", "off"])
    parser.add_argument("--flush", type=float, default=1.0)
    parser.add_argument("--chunks", type=int, default=60)
    parser.add_argument("--pace", type=float, default=0.04)
    parser.add_argument("--chat-rate", type=float, default=1.0)
    parser.add_argument("--ttft", type=float, default=0.3, help="model time to first token")
    add_fault_arguments(parser)
    args = parser.parse_args()
    # This file is named like the python-telegram-bot package: keep its folder off the
    # import path (or ``import telegram`` finds this script), and put the repository on
    # it for the Telegram fake in tests/fakes.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("PTB_TIMEDELTA", "true")
    os.environ["TELEGRAM_BOT_TOKEN"] = TOKEN
    configure_logging("warning", "pretty", sys.stderr)
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # the fake's teardown chatter
    if args.faults:
        run_faults(args)
        return
    results = anyio.run(run_modes, args)
    report(results, args)
    report_first_visible(anyio.run(first_visible_modes, args), args)


async def run_modes(args: argparse.Namespace) -> list[ModeResult]:
    """Every mode at once, each with its own fake and daemon host."""
    results: dict[str, ModeResult] = {}

    async def one(mode: str) -> None:
        results[mode] = await run_mode(mode, args)

    async with anyio.create_task_group() as group:
        for mode in args.modes:
            group.start_soon(one, mode)
    return [results[mode] for mode in args.modes]


# -- first visible text against the model's time to first token ---------------------


@dataclass
class FirstVisible:
    mode: str
    leading_edge: bool
    gaps: list[float] = field(default_factory=list)
    """Per answer: first visible text (draft or message) minus the model's first token."""


def _settings(fake: Any, mode: str, args: argparse.Namespace) -> Settings:
    return Settings.model_validate(
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
                    "chat_min_interval": args.chat_rate,
                }
            },
        }
    )


async def first_visible_run(mode: str, args: argparse.Namespace, result: FirstVisible) -> None:
    """``--answers`` questions; the model thinks ``--ttft`` seconds, then streams 10
    chunks. Answers are ``--chat-rate`` apart, so the per-chat pace never holds one up."""
    from tests.fakes.telegram_api import TelegramFake

    with (
        TelegramFake(
            TOKEN, per_chat_interval=args.chat_rate, burst=3, global_per_second=30
        ) as fake,
        tempfile.TemporaryDirectory() as state,
    ):
        loaded = LoadedConfig(
            _settings(fake, "off" if mode == "off" else mode, args), None, Path(state)
        )
        async with open_host(loaded) as host, anyio.create_task_group() as group:
            provider = host.provider
            assert isinstance(provider, ScriptedProvider)
            group.start_soon(host.pump.run, host.sources)
            await fake.wait_for(lambda: fake.polling, 10)
            for index in range(args.answers):
                words = [f"first{index}-{n} " for n in range(10)]
                first_token: list[float] = []

                async def think() -> None:
                    await anyio.sleep(args.ttft)

                async def mark(tokens: list[float] = first_token) -> None:
                    tokens.append(time.monotonic())

                provider.push(
                    [Await(think), Await(mark), Say(words[0]), Say(*words[1:], delay=args.pace)]
                )
                calls_before = len(fake.calls(chat_id=CHAT))
                fake.push_text(CHAT, CHAT, f"quick question {index}")
                answer = "".join(words).strip()

                def answered(answer: str = answer) -> bool:
                    return answer in fake.texts(CHAT)

                await fake.wait_for(answered, 60)
                first = next(
                    call
                    for call in fake.calls(chat_id=CHAT)[calls_before:]
                    if call.status == 200 and call.method in VISIBLE
                )
                result.gaps.append(first.at - first_token[0])
                await anyio.sleep(args.chat_rate)
            host.pump.stop()


async def first_visible_modes(args: argparse.Namespace) -> list[FirstVisible]:
    """Each mode with the pump's leading edge, then (a baseline, same process) with the
    first update held for the next tick like every other."""
    from thalos_bot.pump.flush import Lane

    def no_lead(self: Lane) -> None:
        """The baseline: the first update waits for a tick like the others."""

    results: list[FirstVisible] = []
    lead = Lane._lead  # noqa: SLF001 - the bench's baseline switches the leading edge off
    for leading_edge in (True, False):
        Lane._lead = lead if leading_edge else no_lead  # type: ignore[method-assign]  # noqa: SLF001
        async with anyio.create_task_group() as group:
            for mode in args.modes:
                if mode == "off":
                    continue  # nothing is visible before the final answer
                result = FirstVisible(mode, leading_edge)
                results.append(result)
                group.start_soon(first_visible_run, mode, args, result)
    Lane._lead = lead  # type: ignore[method-assign] # noqa: SLF001
    return results


def report_first_visible(results: list[FirstVisible], args: argparse.Namespace) -> None:
    print()
    print(
        f"first visible text minus the model's first token (model TTFT {args.ttft:.2f} s, "
        f"flush {args.flush:.2f} s; target <= 0.2 s)"
    )
    header = f"{'mode':<6} {'first update':<24} {'p50':>7} {'p90':>7} {'max':>7}"
    print(header)
    print("-" * len(header))
    for r in results:
        how = "at once (leading edge)" if r.leading_edge else "next tick (baseline)"
        print(
            f"{r.mode:<6} {how:<24} {percentile(r.gaps, 0.5):>6.3f}s "
            f"{percentile(r.gaps, 0.9):>6.3f}s {max(r.gaps):>6.3f}s"
        )


# -- the delivery fault matrix -------------------------------------------------------


def add_fault_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--faults", action="store_true", help="run the delivery fault matrix instead"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each fault (--faults)")
    parser.add_argument("--times-429", type=int, default=5, help="429s in a row (--faults)")
    parser.add_argument("--request-timeout", type=float, default=1.0, help="(--faults)")


def run_faults(args: argparse.Namespace) -> None:
    """The delivery fault matrix (bench/telegram_faults.py), every mode side by side."""
    from bench.telegram_faults import report_fault_matrix, run_fault_matrix

    results = anyio.run(run_fault_matrix, args, TOKEN)
    report_fault_matrix(results, args)


if __name__ == "__main__":
    main()
