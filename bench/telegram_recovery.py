"""The Telegram channel's receiving side under outages and hostile updates, in real time.

    python bench/telegram_recovery.py outage [--seconds 20 60] [--kinds refused 502]
    python bench/telegram_recovery.py fuzz [--updates 5000] [--batch 20]

``outage``: the daemon's Telegram channel (the real plugin, PTB, pump and runtime)
polls the Telegram fake through a gateway with production timings (poll_timeout 30 s,
request_timeout 10 s, backoff 1-60 s). After it receives, the gateway goes down for
``--seconds`` (``refused``: nothing listens; ``502``: a proxy whose upstream is gone),
then comes back and a user sends a message at once. Printed per outage: how long after
the outage ended the message was received (acknowledged by getUpdates) and answered,
and the getUpdates tries during it. A baseline run in the same process caps nothing
(``poll_retry_max`` = ``backoff_max``: the exponential backoff of earlier versions).
Target: received within poll_timeout + 2 s.

``fuzz``: one daemon gets ``--updates`` random, truncated and mistyped ``message``
updates built from the Bot API's shapes, ``--batch`` at a time; after every batch a
second allowed user's message must still be answered. Prints the counts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from tests.fakes.telegram_gateway import Outage

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
USER = 4242
FRIEND = 7777
PRODUCTION = {
    "poll_timeout": 30,
    "request_timeout": 10,
    "backoff_initial": 1.0,
    "backoff_max": 60.0,
}


@dataclass
class Recovery:
    kind: str
    seconds: float
    capped: bool
    received_after: float = float("nan")
    answered_after: float = float("nan")
    tries: int = 0


async def one_outage(kind: Outage, seconds: float, token: str, *, capped: bool) -> Recovery:
    from tests.fakes.telegram_api import TelegramFake
    from tests.fakes.telegram_gateway import Gateway
    from tests.telegram.harness import running_bot

    result = Recovery(kind, seconds, capped)
    overrides: dict[str, Any] = dict(PRODUCTION)
    if not capped:
        overrides["poll_retry_max"] = overrides["backoff_max"]
    with (
        TelegramFake(token, per_chat_interval=0.05, global_per_second=1000) as fake,
        Gateway(fake.base_url) as gateway,
    ):
        async with running_bot(fake, base_url=gateway.base_url, **overrides) as bot:
            assert bot.pair.receiving is not None
            await bot.pair.receiving.wait()
            gateway.down(kind)
            await anyio.sleep(seconds)
            gateway.up()
            ended = time.monotonic()
            update_id = bot.say("are you back?")
            await fake.wait_for(lambda: fake.acknowledged_offset > update_id, 300)
            result.received_after = time.monotonic() - ended
            await bot.answer(timeout=300)
            result.answered_after = time.monotonic() - ended
            result.tries = gateway.bad_gateway
    return result


async def run_outages(args: argparse.Namespace) -> list[Recovery]:
    from tests.telegram.harness import fake_token

    token = fake_token()  # one for every run: the plugin reads it from the environment
    os.environ["TELEGRAM_BOT_TOKEN"] = token
    results: list[Recovery] = []

    async def one(kind: Outage, seconds: float, capped: bool) -> None:
        results.append(await one_outage(kind, seconds, token, capped=capped))

    async with anyio.create_task_group() as group:
        for seconds in args.seconds:
            for kind in args.kinds:
                for capped in (True, False):
                    group.start_soon(one, kind, seconds, capped)
    return sorted(results, key=lambda r: (r.seconds, r.kind, not r.capped))


def report_outages(results: list[Recovery]) -> None:
    print("outage recovery, production timings (poll_timeout 30 s: target received <= 32 s)")
    header = (
        f"{'outage':<8} {'kind':<8} {'retry cap':<22} {'received':>9} {'answered':>9} {'tries':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        cap = "poll_retry_max 1.5 s" if r.capped else "none (baseline)"
        tries = str(r.tries) if r.kind == "502" else "-"
        print(
            f"{r.seconds:>6.0f} s {r.kind:<8} {cap:<22} {r.received_after:>8.2f}s "
            f"{r.answered_after:>8.2f}s {tries:>6}"
        )
    print("(tries: getUpdates answered 502 during the outage; refused ones cannot be counted)")


def run_fuzz(args: argparse.Namespace) -> None:
    """The daemon runs in a portal thread; hypothesis drives the batches from this one."""
    from anyio.from_thread import start_blocking_portal
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.fakes.telegram_api import TelegramFake
    from tests.fakes.telegram_shapes import message_payloads
    from tests.telegram.harness import STRANGER, fake_token, running_bot

    ids = st.sampled_from([USER, STRANGER, 0, -1]) | st.integers(-(2**53), 2**53)
    payload = message_payloads(ids.filter(lambda i: i != FRIEND))
    batch = st.lists(payload, min_size=args.batch, max_size=args.batch)
    batches = -(-args.updates // args.batch)
    sent: list[int] = []
    latencies: list[float] = []
    started = time.monotonic()
    with (
        TelegramFake(fake_token(), per_chat_interval=0.05, global_per_second=1000) as fake,
        start_blocking_portal() as portal,
    ):
        os.environ["TELEGRAM_BOT_TOKEN"] = fake.token
        context = running_bot(fake, allowed_user_ids=[USER, FRIEND])
        with portal.wrap_async_context_manager(context) as bot:

            @settings(
                max_examples=batches,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(batch)
            def one_batch(payloads: list[Any]) -> None:
                for item in payloads:
                    fake.push_update("message", item)
                asked = time.monotonic()
                number = len(latencies)
                bot.say(f"ping {number}", chat=FRIEND, user=FRIEND)
                texts = portal.call(lambda: bot.answer(number + 1, chat=FRIEND, timeout=60))
                assert texts[-1] == f"You said: ping {number}", texts[-1]
                latencies.append(time.monotonic() - asked)
                sent.append(len(payloads))
                if len(sent) % 10 == 0:
                    print(f"  {sum(sent)} updates so far", file=sys.stderr)

            one_batch()
        acknowledged = fake.acknowledged_offset
    print(
        f"fuzz: {sum(sent)} fuzzed updates in {len(sent)} batches of {args.batch}; after "
        f"every batch the daemon was up and answered ({len(latencies)}/{len(sent)}); "
        f"offset acknowledged to {acknowledged}; {time.monotonic() - started:.1f} s"
    )
    print(
        f"liveness answer after a batch: p50 {statistics.median(latencies):.3f} s, "
        f"max {max(latencies):.3f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    outage = sub.add_parser("outage")
    outage.add_argument("--seconds", type=float, nargs="+", default=[20, 60])
    outage.add_argument("--kinds", nargs="+", default=["refused", "502"])
    fuzz = sub.add_parser("fuzz")
    fuzz.add_argument("--updates", type=int, default=5000)
    fuzz.add_argument("--batch", type=int, default=20)
    args = parser.parse_args()
    # This folder holds telegram.py, named like the python-telegram-bot package: keep it
    # off the import path, and put the repository on it for tests/fakes.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("PTB_TIMEDELTA", "true")
    from thalos_bot.telemetry.logging import configure_logging

    configure_logging("error", "pretty", sys.stderr)
    import logging

    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    logging.getLogger("telegram").setLevel(logging.CRITICAL)  # PTB's 502-body tracebacks
    if args.what == "outage":
        report_outages(anyio.run(run_outages, args))
    else:
        run_fuzz(args)


if __name__ == "__main__":
    main()
